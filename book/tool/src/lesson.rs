//! What a lesson shows from the catalog: its place on the path, a region of the exercise, the fix
//! as a diff, the hints, and the path's map and a tool's lessons.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result};
use grader::exercise::path::LearningPath;

use crate::Exercise;

pub(crate) fn render_diff(e: &Exercise, workbook: &Path) -> String {
    let rel = |p: &Path| p.strip_prefix(workbook).unwrap_or(p).display().to_string();
    let diff = similar::TextDiff::from_lines(&e.original, &e.solution_text)
        .unified_diff()
        .context_radius(2)
        .header(&rel(&e.exercise), &rel(&e.solution))
        .to_string();
    // The region markers (`// ANCHOR: bug`) are the grader's, the same on both sides: a reader of
    // the fix does not need them among its context lines (the hunk headers keep the file's lines).
    let shown: String = diff
        .lines()
        .filter(|l| !(l.starts_with(' ') && is_region_marker(l)))
        .map(|l| format!("{l}\n"))
        .collect();
    format!("```diff\n{shown}```\n")
}

/// Each hint folded on its own ("Hint 1 of 3"), so that a reader opens only as many as they need:
/// the same hints, in the same order, as `cargo xtask hint` gives one at a time.
pub(crate) fn render_hints(e: &Exercise) -> String {
    let n = e.hints.len();
    e.hints
        .iter()
        .enumerate()
        .map(|(k, hint)| {
            format!(
                "<details>\n<summary>Hint {} of {n}</summary>\n\n{hint}\n\n</details>\n\n",
                k + 1
            )
        })
        .collect()
}

fn is_region_marker(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("// ANCHOR:") || t.starts_with("// ANCHOR_END:")
}

/// "*Level 2 of 3* · shared-memory race · found with racecheck · any CUDA GPU": a lesson's place,
/// its bug class (so that search finds the lesson by it) and its needs.
pub(crate) fn lesson_marks(e: &Exercise) -> String {
    let level = match e.level {
        Some(n) => format!("*Level {n} of 3*"),
        None => "*Level not given*".into(),
    };
    let found = match (e.finding, e.perf) {
        (Some((tool, _)), _) => format!("found with {}", tool.name()),
        // The performance track's one explanation of how a version is judged, rather than the
        // same paragraph on every lesson.
        (None, true) if e.call_clock => {
            "timed by the clock of the whole call ([how it is judged](../tools/ncu.md#which-clock-judges-which-exercise))".into()
        }
        (None, true) => {
            "timed with Nsight Compute ([how it is judged](../tools/ncu.md))".into()
        }
        (None, false) => "found by its cases (no tool sees it)".into(),
    };
    let gpu =
        match grader::exercise::manifest::Capability::parse(e.requires.as_deref().unwrap_or("")) {
            Some(cap) if cap.family() == "Hopper" => {
                format!("needs compute capability {cap} (Hopper: H100, H200)")
            }
            Some(cap) => format!("needs compute capability {cap} ({} or newer)", cap.family()),
            None => "any CUDA GPU".into(),
        };
    format!("{level} · {} · {found} · {gpu}\n", e.bug_class)
}

/// "Lessons: [03-race](../lessons/03-race.md) (shared-race), ...": every exercise whose manifest
/// expects `tool` to flag it, with the kind of record it expects and the options the manifest adds
/// to the tool's runs ("(heap-leak, with `--leak-check full`)").
pub(crate) fn lessons_for(exercises: &[Exercise], tool: &str, up: &str) -> Result<String> {
    let tool = grader::exercise::manifest::Tool::ALL
        .into_iter()
        .find(|t| t.name() == tool)
        .with_context(|| format!("no tool `{tool}` (memcheck, racecheck, initcheck, synccheck)"))?;
    let lessons: Vec<String> = exercises
        .iter()
        .filter_map(|e| {
            let (t, kind) = e.finding?;
            if t != tool {
                return None;
            }
            let with = if e.tool_options.is_empty() {
                String::new()
            } else {
                format!(", with `{}`", e.tool_options.join(" "))
            };
            let id = &e.id;
            Some(format!(
                "[{id}]({up}lessons/{id}.md) ({}{with})",
                kind.name()
            ))
        })
        .collect();
    Ok(match lessons.len() {
        0 => String::new(),
        1 => format!("Lesson: {}.\n", lessons[0]),
        _ => format!("Lessons: {}.\n", lessons.join(", ")),
    })
}

/// The map of the learning path: one row per chapter, in order, with what it teaches and its
/// lessons grouped by level (the path goes from easy to hard inside each chapter).
pub(crate) fn render_path(path: &LearningPath, exercises: &[Exercise], up: &str) -> String {
    let mut out = String::from(
        "| | chapter | what it teaches | its lessons, easiest first |\n| --- | --- | --- | --- |\n",
    );
    for (n, chapter) in path.chapters.iter().enumerate() {
        let mut by_level: Vec<(Option<u8>, Vec<String>)> = Vec::new();
        for id in &chapter.exercises {
            let Some(e) = exercises.iter().find(|e| &e.id == id) else {
                continue;
            };
            let link = format!("[{}]({up}{})", e.id, e.chapter);
            match by_level.last_mut() {
                Some((level, links)) if *level == e.level => links.push(link),
                _ => by_level.push((e.level, vec![link])),
            }
        }
        let lessons: Vec<String> = by_level
            .into_iter()
            .map(|(level, links)| match level {
                Some(l) => format!("level {l}: {}", links.join(", ")),
                None => links.join(", "),
            })
            .collect();
        let mut why = chapter.why.clone();
        if let Some(first) = why.get(..1) {
            why.replace_range(..1, &first.to_uppercase());
        }
        let _ = writeln!(
            out,
            "| {} | **{}** | {why} | {} |",
            n + 1,
            chapter.title,
            lessons.join("<br>")
        );
    }
    out
}

/// The lines between a region's markers in the pristine exercise.
pub(crate) fn render_region(e: &Exercise, name: &str) -> Result<String> {
    let regions = grader::exercise::regions::parse(&e.original)
        .map_err(|err| anyhow::anyhow!("{}: line {}: {}", e.id, err.line, err.message))?;
    let r = regions
        .iter()
        .find(|r| r.name == name)
        .with_context(|| format!("{} has no region `{name}`", e.id))?;
    let lines: Vec<&str> = e.original.lines().collect();
    Ok(lines[r.begin_line..r.end_line - 1]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect())
}
