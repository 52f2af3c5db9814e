//! The cudabugs book: mdBook (as a library, no separate install) plus one preprocessor, `cudabugs`,
//! that renders the committed GPU verification record and the exercise/solution diffs into the
//! lessons, and refuses to build a book with a broken include, a dead internal link (to a page, or
//! to a heading on it) or an exercise without its lesson.
//!
//! Directives (each on a line of its own):
//! - `{{#cudabugs-record ID}}`: the command the grader ran, what the tool printed, the checks and the
//!   ncu times, from `book/verification.json`;
//! - `{{#cudabugs-code ID REGION}}`: the lines of a marked region of the pristine exercise (never
//!   the learner's working copy, which may be edited);
//! - `{{#cudabugs-diff ID}}`: the fix, as a diff of the pristine exercise against its solution;
//! - `{{#cudabugs-hints ID}}`: the manifest's hints, each folded on its own, in order;
//! - `{{#cudabugs-summary}}`: one table over every exercise; `{{#cudabugs-machine}}`: the GPU and tools;
//! - `{{#cudabugs-second-gpu FILE}}`: another GPU's record (`book/FILE`) beside the book's: the
//!   verdicts that differ, and each exercise's times on both;
//! - `{{#cudabugs-roofline ID}}`: a performance exercise's roofline (inline SVG, plotters) from the record;
//! - `{{#cudabugs-timeline ID}}`: a call-clocked exercise's timeline, one call of the original and
//!   one of the fix on the same scale (inline SVG), from the record;
//! - `{{#cudabugs-tool-matrix}}`: which tool flagged which exercise's untouched file, how often a
//!   plain run was right, and the bug classes no tool flagged, all from the record;
//! - `{{#cudabugs-path}}`: the map of the learning path (`exercises/path.toml`): its chapters in
//!   order, what each teaches and its lessons by level. The table of contents must follow the path.

mod layout;
mod roofline;
mod timeline;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use grader::exercise::path::{LearningPath, Stop};
use grader::judge::sanitize::ToolStatus;
use grader::judge::verdict::Status;
use grader::judge::verify::{ExerciseRecord, PlainRuns, VerificationRecord};
use mdbook_driver::MDBook;
use mdbook_preprocessor::book::{Book, BookItem, Chapter};
use mdbook_preprocessor::{Preprocessor, PreprocessorContext};

mod links;

pub const RECORD_FILE: &str = "verification.json";
/// The preprocessor. `workbook` is the folder with exercises/ and solutions/.
pub struct Cudabugs {
    pub workbook: PathBuf,
}

struct Exercise {
    id: String,
    chapter: String,
    exercise: PathBuf,
    solution: PathBuf,
    /// The pristine exercise and the solution, as the catalog makes them.
    original: String,
    solution_text: String,
    /// Where the exercise sits on the path (1 to 3) and the GPU it needs, as its manifest says.
    level: Option<u8>,
    requires: Option<String>,
    perf: bool,
    /// What is wrong, in the manifest's words: what a reader searches for.
    bug_class: String,
    /// The manifest's hints, from the first nudge to the last.
    hints: Vec<String>,
    /// The tool that flags the untouched exercise, and the kind of its record (the manifest's).
    finding: Option<(
        grader::exercise::manifest::Tool,
        grader::exercise::manifest::FindingKind,
    )>,
}

impl Cudabugs {
    fn exercises(&self) -> Result<Vec<Exercise>> {
        let found = grader::exercise::catalog::discover(&self.workbook)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(found
            .into_iter()
            .map(|d| Exercise {
                id: d.manifest.id.clone(),
                chapter: d.manifest.manifest.chapter.clone(),
                exercise: d.exercise_path,
                solution: d.solution_path,
                finding: d.manifest.expected_finding(),
                level: d.manifest.level(),
                requires: d.manifest.requires().map(|c| c.to_string()),
                perf: d.manifest.manifest.perf.is_some(),
                bug_class: d.manifest.manifest.bug_class.clone(),
                hints: d.manifest.manifest.hints.get_ref().clone(),
                original: d.original,
                solution_text: d.solution,
            })
            .collect())
    }
}

impl Cudabugs {
    /// The learning path, as `list` and `check` read it; a book is never built from a broken one.
    fn path(&self, exercises: &[Exercise]) -> Result<LearningPath> {
        let file = self.workbook.join(grader::exercise::path::PATH_FILE);
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        let stops: Vec<Stop> = exercises
            .iter()
            .map(|e| Stop {
                id: &e.id,
                level: e.level,
            })
            .collect();
        Ok(grader::exercise::path::parse(
            Path::new(grader::exercise::path::PATH_FILE),
            &text,
            &stops,
        )?)
    }
}

/// The table of contents takes the lessons in the path's order, each under a part titled as its
/// chapter: a reader of the book and a learner at `list` walk the same path.
fn summary_follows_path(book: &Book, path: &LearningPath, exercises: &[Exercise]) -> Vec<String> {
    let lesson_of = |p: &Path| exercises.iter().find(|e| Path::new(&e.chapter) == p);
    let mut part = String::new();
    let mut seen = Vec::new();
    let mut errors = Vec::new();
    for item in book.iter() {
        match item {
            BookItem::PartTitle(title) => part = title.clone(),
            BookItem::Chapter(c) => {
                let Some(e) = c.path.as_deref().and_then(lesson_of) else {
                    continue;
                };
                seen.push(e.id.clone());
                if let Some((chapter, _)) = path.place(&e.id) {
                    if chapter.title != part {
                        errors.push(format!(
                            "SUMMARY.md: {} is under \"{part}\", but the path puts it in \"{}\"",
                            e.id, chapter.title
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    let order: Vec<&str> = path.order().collect();
    if errors.is_empty() && seen != order {
        errors.push(format!(
            "SUMMARY.md lists the lessons as {}, but {} orders them {}",
            seen.join(", "),
            grader::exercise::path::PATH_FILE,
            order.join(", ")
        ));
    }
    errors
}

impl Preprocessor for Cudabugs {
    fn name(&self) -> &str {
        "cudabugs"
    }

    fn run(
        &self,
        ctx: &PreprocessorContext,
        mut book: Book,
    ) -> mdbook_preprocessor::errors::Result<Book> {
        let src = ctx.root.join(&ctx.config.book.src);
        let record_path = ctx.root.join(RECORD_FILE);
        let record: VerificationRecord = serde_json::from_str(
            &std::fs::read_to_string(&record_path)
                .with_context(|| format!("reading {}", record_path.display()))?,
        )
        .with_context(|| format!("{} is not a verification record", record_path.display()))?;
        let exercises = self.exercises()?;
        let path = self.path(&exercises)?;
        let mut errors = summary_follows_path(&book, &path, &exercises);

        let chapters: BTreeSet<PathBuf> = book.chapters().filter_map(|c| c.path.clone()).collect();
        for ex in &exercises {
            if !chapters.contains(Path::new(&ex.chapter)) {
                errors.push(format!(
                    "exercise {} has no lesson: {} is not a chapter in SUMMARY.md",
                    ex.id, ex.chapter
                ));
            }
        }

        book.for_each_chapter_mut(|chapter| {
            let Some(source) = chapter.source_path.clone() else {
                return;
            };
            let name = source.display().to_string();
            match std::fs::read_to_string(src.join(&source)) {
                Ok(raw) => errors.extend(
                    check_includes(&raw, &src.join(&source))
                        .into_iter()
                        .map(|e| format!("{name}: {e}")),
                ),
                Err(e) => errors.push(format!("{name}: {e}")),
            }
            if chapter.content.contains("{{#include") {
                errors.push(format!(
                    "{name}: an include was left unexpanded (see the messages above)"
                ));
            }
            match expand(chapter, &record, &exercises, &path, &self.workbook) {
                Ok(text) => chapter.content = text,
                Err(e) => errors.push(format!("{name}: {e}")),
            }
            errors.extend(
                dead_links(chapter, &src)
                    .into_iter()
                    .map(|e| format!("{name}: {e}")),
            );
        });
        if !errors.is_empty() {
            bail!(
                "the book has {} problem(s):\n  {}",
                errors.len(),
                errors.join("\n  ")
            );
        }
        Ok(book)
    }
}

/// Every `{{#include PATH[:ANCHOR]}}` of a chapter's source names a file that exists and, for an
/// anchor, one that the file marks. (mdBook itself only logs a missing file, and includes nothing
/// for a missing anchor.)
fn check_includes(raw: &str, chapter_file: &Path) -> Vec<String> {
    let dir = chapter_file.parent().unwrap_or(Path::new("."));
    let mut errors = Vec::new();
    for (n, line) in raw.lines().enumerate() {
        let mut rest = line;
        while let Some(start) = rest.find("{{#include ") {
            let after = &rest[start + "{{#include ".len()..];
            let Some(end) = after.find("}}") else { break };
            let target = after[..end].trim();
            let (file, anchor) = match target.split_once(':') {
                Some((f, a)) => (f, Some(a)),
                None => (target, None),
            };
            let path = dir.join(file);
            match std::fs::read_to_string(&path) {
                Err(e) => errors.push(format!("line {}: include {file}: {e}", n + 1)),
                Ok(text) => {
                    if let Some(anchor) =
                        anchor.filter(|a| !a.chars().next().is_some_and(|c| c.is_ascii_digit()))
                    {
                        let marks = |tag: &str| {
                            text.lines().any(|l| {
                                l.split_once(tag)
                                    .is_some_and(|(_, name)| name.trim() == anchor)
                            })
                        };
                        if !marks("ANCHOR:") || !marks("ANCHOR_END:") {
                            errors.push(format!("line {}: include {file}:{anchor}: the file has no anchor `{anchor}`", n + 1));
                        }
                    }
                }
            }
            rest = &after[end..];
        }
    }
    errors
}

/// Relative links and images must point at files of the book.
fn dead_links(chapter: &Chapter, src: &Path) -> Vec<String> {
    use pulldown_cmark::{Event, Parser, Tag};
    let Some(path) = &chapter.path else {
        return Vec::new();
    };
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut errors = Vec::new();
    for (event, range) in Parser::new(&chapter.content).into_offset_iter() {
        let dest = match event {
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => dest_url,
            _ => continue,
        };
        if dest.contains("://") || dest.starts_with('#') || dest.starts_with("mailto:") {
            continue;
        }
        let file = dest.split('#').next().unwrap_or("");
        let target = normalise(&dir.join(file));
        if !src.join(&target).is_file() {
            let line = chapter.content[..range.start].matches('\n').count() + 1;
            errors.push(format!(
                "line {line}: dead link `{dest}` ({} does not exist)",
                target.display()
            ));
        }
    }
    errors
}

pub(crate) fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn expand(
    chapter: &Chapter,
    record: &VerificationRecord,
    exercises: &[Exercise],
    path: &LearningPath,
    workbook: &Path,
) -> Result<String> {
    let mut out = String::new();
    // Links to other pages, relative to this chapter's folder ("../" from lessons/).
    let up = &"../".repeat(
        chapter
            .path
            .as_ref()
            .map(|p| p.components().count().saturating_sub(1))
            .unwrap_or(0),
    );
    // A lesson says under its title where it sits on the path and what it needs (its manifest's).
    let lesson = exercises
        .iter()
        .find(|e| chapter.path.as_deref() == Some(Path::new(&e.chapter)));
    let mut marked = false;
    // A fenced `cudabugs-layout` block is the data of a picture: drawn here as SVG.
    let mut layout: Option<String> = None;
    for line in chapter.content.lines() {
        if let Some(spec) = layout.as_mut() {
            if line.trim() == "```" {
                // One message: the book's problem list shows each error's first line.
                let picture = layout::svg(spec)
                    .map_err(|e| anyhow::anyhow!("a cudabugs-layout block: {e:#}"))?;
                out.push_str(&format!(
                    "\n<div class=\"cudabugs-layout\">\n{picture}</div>\n\n"
                ));
                layout = None;
            } else {
                spec.push_str(line);
                spec.push('\n');
            }
            continue;
        }
        if let (Some(e), false, true) = (lesson, marked, line.starts_with("# ")) {
            out.push_str(line);
            out.push_str("\n\n");
            out.push_str(&lesson_marks(e));
            out.push('\n');
            marked = true;
            continue;
        }
        if line.trim() == "```cudabugs-layout" {
            layout = Some(String::new());
            continue;
        }
        let t = line.trim();
        let Some(inner) = t
            .strip_prefix("{{#cudabugs-")
            .and_then(|r| r.strip_suffix("}}"))
        else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let mut words = inner.split_whitespace();
        let (what, id) = (words.next().unwrap_or(""), words.next());
        // An exercise of the catalog that the committed record does not have yet (added since the
        // last GPU run) has no record: its lesson says so rather than showing anything invented.
        let exercise = |id: Option<&str>| -> Result<(Option<&ExerciseRecord>, &Exercise)> {
            let id = id.context("the directive needs an exercise id")?;
            let e = exercises
                .iter()
                .find(|e| e.id == id)
                .with_context(|| format!("no exercise {id}"))?;
            Ok((record.exercises.iter().find(|r| r.id == id), e))
        };
        match what {
            "record" => match exercise(id)? {
                (Some(r), e) => {
                    let source = e
                        .exercise
                        .strip_prefix(workbook)
                        .unwrap_or(&e.exercise)
                        .display()
                        .to_string();
                    out.push_str(&render_record(record, r, &source))
                }
                (None, e) => out.push_str(&not_yet_run(&e.id)),
            },
            "diff" => {
                let (_, e) = exercise(id)?;
                out.push_str(&render_diff(e, workbook));
            }
            "hints" => {
                let (_, e) = exercise(id)?;
                out.push_str(&render_hints(e));
            }
            "code" => {
                let (_, e) = exercise(id)?;
                let region = words
                    .next()
                    .context("the directive needs a region name: {{#cudabugs-code ID REGION}}")?;
                out.push_str(&render_region(e, region)?);
            }
            "summary" => {
                // `{{#cudabugs-summary lessons}}`: the learners' index names each bug's class, not
                // its line; the GPU record's table (no word) keeps the finding where it was seen.
                let learners = id == Some("lessons");
                out.push_str(&render_summary(record, up, learners));
                out.push_str(&unrecorded(record, exercises, up));
            }
            "lessons-for" => {
                // A tool page's lessons, from the manifests: the list cannot go stale.
                let tool =
                    id.context("the directive needs a tool: {{#cudabugs-lessons-for TOOL}}")?;
                out.push_str(&lessons_for(exercises, tool, up)?);
            }
            "machine" => out.push_str(&machine(record)),
            "path" => out.push_str(&render_path(path, exercises, up)),
            "second-gpu" => {
                // The same catalog verified on another GPU, set against the book's record.
                let file = id.context(
                    "the directive needs the second record's file: {{#cudabugs-second-gpu FILE}}",
                )?;
                let path = workbook.join("book").join(file);
                let other: VerificationRecord = serde_json::from_str(
                    &std::fs::read_to_string(&path)
                        .with_context(|| format!("reading {}", path.display()))?,
                )
                .with_context(|| format!("{} is not a verification record", path.display()))?;
                out.push_str(&render_second_gpu(record, &other));
            }
            "tool-matrix" => {
                out.push_str(&render_tool_matrix(record, up)?);
                out.push_str(&unrecorded(record, exercises, up));
            }
            // Charts from the record, inline so they travel with the page; one line, so Markdown
            // leaves them whole.
            "roofline" | "timeline" => {
                let (Some(r), _) = exercise(id)? else {
                    out.push_str(&not_yet_run(id.unwrap_or_default()));
                    continue;
                };
                let perf = r.perf.as_ref().with_context(|| {
                    format!("{} has no performance record: run `verify` on a GPU", r.id)
                })?;
                let svg = if what == "roofline" {
                    roofline::svg(perf)
                } else {
                    timeline::svg(perf)
                };
                let svg = svg.with_context(|| format!("the {what} of {}", r.id))?;
                out.push_str(&svg.replace('\n', " "));
                out.push('\n');
            }
            other => bail!("unknown directive `{{{{#cudabugs-{other}}}}}`"),
        }
    }
    if layout.is_some() {
        bail!("a cudabugs-layout block is not closed with ```");
    }
    Ok(out)
}

/// A lesson's place for the GPU record of an exercise the committed record does not have.
fn not_yet_run(id: &str) -> String {
    format!(
        "> **Not yet run on a GPU.** {id} is newer than the committed verification record (`book/{RECORD_FILE}`), so this \
         page shows no tool output, timings or verdict yet: they appear here once `cargo xtask verify --survey --record \
         book/{RECORD_FILE}` has run on a GPU.\n"
    )
}

/// The exercises of the catalog the record does not cover, said under a table drawn from it.
fn unrecorded(record: &VerificationRecord, exercises: &[Exercise], up: &str) -> String {
    let missing: Vec<String> = exercises
        .iter()
        .filter(|e| !record.exercises.iter().any(|r| r.id == e.id))
        .map(|e| format!("[{}]({up}{})", e.id, e.chapter))
        .collect();
    if missing.is_empty() {
        return String::new();
    }
    format!(
        "\nNot yet run on a GPU (newer than this record, so not in the table): {}.\n",
        missing.join(", ")
    )
}

fn machine(record: &VerificationRecord) -> String {
    let gpu = record
        .gpu
        .as_ref()
        .map(|g| format!("{} ({})", g.name, record.arch))
        .unwrap_or_else(|| "no GPU".into());
    format!(
        "Recorded on an {gpu}, driver {}, with nvcc {}, compute-sanitizer {} and ncu {}, on {}.\n",
        record.driver_version.as_deref().unwrap_or("?"),
        record
            .tools
            .nvcc
            .as_deref()
            .and_then(|v| v.split('/').next())
            .map(|v| v.trim_start_matches("Build "))
            .unwrap_or("?"),
        record
            .tools
            .compute_sanitizer
            .as_deref()
            .map(short_version)
            .unwrap_or("?"),
        record
            .tools
            .ncu
            .as_deref()
            .map(short_version)
            .unwrap_or("?"),
        &record.created[..10.min(record.created.len())],
    )
}

fn short_version(v: &str) -> &str {
    v.trim_start_matches("Version ")
        .split(' ')
        .next()
        .unwrap_or(v)
}

/// Paths in a recorded command, relative to the workbook (the record holds the GPU machine's).
fn relative_command(command: &str) -> String {
    command
        .split(' ')
        .map(|w| {
            for anchor in ["/.cudabugs/", "/exercises/", "/solutions/"] {
                if let Some(i) = w.find(anchor) {
                    let head = &w[..i];
                    let prefix = head
                        .rsplit_once('=')
                        .map(|(k, _)| format!("{k}="))
                        .unwrap_or_default();
                    return format!("{prefix}{}", &w[i + 1..]);
                }
            }
            w.to_string()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn us(ns: f64) -> String {
    format!("{:.1} µs", ns / 1e3)
}

/// The widest line a code block of a lesson holds without scrolling at 1280 px.
const LINE_CHARS: usize = 96;
/// The tool output a lesson shows open; the rest is folded.
const SHOWN_LINES: usize = 20;

/// A line cut into pieces of at most `LINE_CHARS`, at spaces where it can; the pieces after the
/// first are indented.
fn wrapped(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line.trim_end().to_string();
    let indent = "    ";
    while rest.chars().count() > LINE_CHARS {
        let limit = rest
            .char_indices()
            .nth(LINE_CHARS)
            .map_or(rest.len(), |(at, _)| at);
        let cut = rest[..limit]
            .rfind(' ')
            .filter(|&at| at > LINE_CHARS / 2)
            .unwrap_or(limit);
        out.push(rest[..cut].trim_end().to_string());
        rest = format!("{indent}{}", rest[cut..].trim_start());
    }
    out.push(rest);
    out
}

/// A tool's output without the records that repeat an earlier one (racecheck reports the same
/// pair of lines again for another launch, with another hazard count), and how many records were
/// left out. A record is the lines between two frame-only lines (`=========`).
fn distinct_lines(text: &str) -> (Vec<String>, usize) {
    let frame_only = |l: &str| l.trim_start_matches('=').trim().is_empty();
    // What makes two records the same: their text without the counts of hazards.
    let key = |record: &[&str]| -> String {
        record
            .iter()
            .filter(|l| !frame_only(l) && !l.contains("COMPUTE-SANITIZER"))
            .map(|l| match l.find(" hazards]") {
                Some(end) => l[..l[..end].rfind('[').unwrap_or(end)].to_string(),
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut seen = BTreeSet::new();
    let mut kept = Vec::new();
    let mut repeated = 0;
    let mut record: Vec<&str> = Vec::new();
    let mut flush = |record: &mut Vec<&str>, kept: &mut Vec<String>| {
        if record.is_empty() {
            return;
        }
        if (record.len() > 1 || !frame_only(record[0])) && !seen.insert(key(record)) {
            repeated += 1;
            record.clear();
            return;
        }
        kept.extend(record.drain(..).map(str::to_string));
    };
    for l in text.lines() {
        record.push(l);
        if frame_only(l) {
            flush(&mut record, &mut kept);
        }
    }
    flush(&mut record, &mut kept);
    (kept, repeated)
}

/// NVIDIA's manual for a tool: the section that documents it.
fn manual(tool: grader::exercise::manifest::Tool) -> String {
    format!(
        "https://docs.nvidia.com/cuda/sanitizer-docs/ComputeSanitizer/index.html#{}-tool",
        tool.name()
    )
}

/// Nsight Compute's guide to what it measures.
const NCU_MANUAL: &str = "https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html";

fn render_record(record: &VerificationRecord, r: &ExerciseRecord, source: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", machine(record));
    match (r.tool, &r.perf) {
        (Some(t), _) => {
            let _ = writeln!(
                out,
                "NVIDIA's manual for this tool: [{}]({}).\n",
                t.name(),
                manual(t)
            );
        }
        (None, Some(_)) => {
            let _ = writeln!(
                out,
                "NVIDIA's guide to these metrics: [the Nsight Compute profiling guide]({NCU_MANUAL}).\n"
            );
        }
        (None, None) => {}
    }
    if let Some(t) = r.tool {
        let _ = writeln!(
            out,
            "Run it yourself: `cargo xtask check {id}` (the grader's whole check), or the tools alone on \
             your file, built with `-G` and run on the exercise's cases:\n\n```console\n$ cargo xtask sanitize {source}\n```\n\n\
             On a program of your own, built with `nvcc -G`, the tool itself is `compute-sanitizer --tool {} ./program`.\n",
            t.name(),
            id = r.id,
        );
    }
    if let Some(text) = &r.tool_output {
        let tool = r.tool.map(|t| t.name()).unwrap_or("the tool");
        let (shown, repeated) = distinct_lines(text);
        let repeats = match repeated {
            0 => String::new(),
            1 => "; one record that repeats an earlier one is left out".into(),
            n => format!("; {n} records that repeat earlier ones are left out"),
        };
        let block = |lines: &[String]| -> String {
            lines
                .iter()
                .flat_map(|l| wrapped(&relative_command(l)))
                .map(|l| format!("{l}\n"))
                .collect()
        };
        if shown.len() > SHOWN_LINES {
            let _ = writeln!(
                out,
                "What {tool} printed (its first {SHOWN_LINES} lines{repeats}):\n\n```text\n{}```\n",
                block(&shown[..SHOWN_LINES])
            );
            let _ = writeln!(
                out,
                "<details>\n<summary>All {} lines</summary>\n\n```text\n{}```\n\n</details>\n",
                shown.len(),
                block(&shown)
            );
        } else {
            let _ = writeln!(
                out,
                "What {tool} printed{}:\n\n```text\n{}```\n",
                if repeats.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", &repeats[2..])
                },
                block(&shown)
            );
        }
    }
    if let Some(f) = &r.finding {
        let at: Vec<String> = f
            .locations
            .iter()
            .map(|l| format!("`{}` ({})", l.short(), l.role))
            .collect();
        let _ = writeln!(
            out,
            "The grader read it as **{} {}** at {}, inside the marked region `{}`: the exercise fails for its intended reason.\n",
            f.tool,
            f.kind,
            at.join(", "),
            r.region
        );
    }
    match (&r.plain_runs, &r.plain_run) {
        (Some(p), Some(plain)) => {
            let _ = writeln!(
                out,
                "Plain `-O3` runs of the same exercise, each a fresh process: {}. {}\n",
                plain_runs_text(p, stopped(r)),
                plain_example(p, plain)
            );
        }
        (None, Some(plain)) => {
            let verdict = if r.plain_run_correct == Some(true) {
                "right: the bug is silent"
            } else {
                "wrong"
            };
            let _ = writeln!(
                out,
                "A plain `-O3` run of the same exercise: {plain}. Its output was {verdict}.\n"
            );
        }
        _ => {}
    }
    // How the grader verified it: its command and every check, for the curious and for authors.
    let _ = writeln!(
        out,
        "<details>\n<summary>How this was verified: the grader's command and checks</summary>\n"
    );
    let tool_step = r
        .checks
        .iter()
        .find(|c| c.name.starts_with("exercise fails under"));
    if let Some(cmd) = tool_step.and_then(|s| s.command.as_deref()) {
        let command: String = wrapped(&format!("$ {}", relative_command(cmd)))
            .into_iter()
            .map(|l| format!("{l}\n"))
            .collect();
        let _ = writeln!(
            out,
            "The command the grader ran on the untouched exercise:\n\n```console\n{command}```\n"
        );
    }
    let _ = writeln!(out, "| check | result | summary |\n| --- | --- | --- |");
    for c in &r.checks {
        let status = match c.status {
            Status::Passed => "passed",
            Status::Failed => "**failed**",
            Status::TimedOut => "**timed out**",
            Status::Hung => "**hung**",
            Status::ToolError => "**tool error**",
            Status::Skipped => "skipped",
        };
        let _ = writeln!(
            out,
            "| {} | {status} | {} |",
            c.name,
            c.summary.replace('|', "\\|")
        );
    }
    let _ = writeln!(out, "\n</details>\n");
    if let Some(p) = &r.perf {
        out.push_str(&render_perf(p));
    }
    if let Some(t) = &r.timing {
        let _ = writeln!(
            out,
            "\nncu `gpu__time_duration.sum` of `{}` per call, base clocks:\n",
            t.kernels.join("`, `")
        );
        let _ = writeln!(
            out,
            "| version | time | ratio to the fix |\n| --- | --- | --- |"
        );
        match t.original_ns {
            Some(o) => {
                let _ = writeln!(
                    out,
                    "| original (the bug) | {} | {:.2}x |",
                    us(o),
                    o / t.reference_ns
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "| original (the bug) | not timed: it {} | - |",
                    stopped(r)
                );
            }
        }
        let _ = writeln!(out, "| the fix | {} | 1.00x |", us(t.reference_ns));
        if let (Some(ns), Some(ratio)) = (t.rerun_ns, t.rerun_ratio) {
            let _ = writeln!(
                out,
                "| the fix, second process | {} | {ratio:.3}x |",
                us(ns)
            );
        }
        let _ = writeln!(
            out,
            "\nA learner's fix passes when it is within {:.2}x of the fix.",
            t.max_ratio_to_reference
        );
    }
    out
}

/// A performance exercise's versions side by side, with the metrics in plain words.
fn render_perf(p: &grader::judge::perf::PerfSummary) -> String {
    let mut out = String::new();
    let name = |v: &str| match v {
        "original" => "original (slow)".to_string(),
        "reference" => "the fix".to_string(),
        other => other.to_string(),
    };
    let _ = writeln!(out, "\nncu of `{}`, base clocks, caches flushed, the median of the bench's repeats; shares are of this GPU's measured peak (memcpy {:.0} GB/s, fp32 FMA {:.1} TFLOP/s under ncu):\n", p.kernels.join("`, `"), p.peak.memcpy_gbps, p.peak.fma_ncu_gflops / 1e3);
    let _ = write!(out, "| | time | speedup |");
    for m in &p.shown {
        let _ = write!(out, " {} |", m.label());
    }
    let _ = writeln!(
        out,
        " on the roofline |\n|{}",
        " --- |".repeat(p.shown.len() + 4)
    );
    for v in &p.versions {
        let _ = write!(
            out,
            "| {} | {} | {:.2}x |",
            name(&v.version),
            us(v.nanoseconds),
            v.speedup
        );
        for m in &p.shown {
            let _ = write!(
                out,
                " {} |",
                if v.metrics.is_empty() {
                    "-".into()
                } else {
                    m.show(v.metric(*m))
                }
            );
        }
        let roof = v
            .roofline
            .as_ref()
            .map(|r| {
                format!(
                    "{:.2} FLOP/B, {:.0}% of the roof",
                    r.intensity,
                    100.0 * r.gflops / r.roof_gflops
                )
            })
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(out, " {roof} |");
    }
    let _ = writeln!(out, "\nA learner's version passes at {:.2}x the original or faster, timed in the same run, with its goals met.\n", p.target_speedup);
    for m in &p.shown {
        let _ = writeln!(out, "- **{}**: {}.", m.label(), m.plain());
    }
    out
}

/// What became of a run that did not finish: a hang exercise's runs hung (killed at its limit),
/// any other's crashed.
fn stopped(e: &ExerciseRecord) -> &'static str {
    if e.detector == grader::exercise::manifest::Detector::Hang {
        "hung"
    } else {
        "crashed"
    }
}

/// "right in 5 of 5 (the bug is silent)", "wrong in 5 of 5", "right in 2 of 5, wrong in 3",
/// "hung in 5 of 5" (`stopped`: the word for a run that did not finish).
fn plain_runs_text(p: &PlainRuns, stopped: &str) -> String {
    let wrong = p.runs - p.correct - p.failed;
    let mut parts = Vec::new();
    if p.correct > 0 {
        parts.push(format!("right in {} of {}", p.correct, p.runs));
    }
    if wrong > 0 {
        parts.push(format!("wrong in {wrong} of {}", p.runs));
    }
    if p.failed > 0 {
        parts.push(format!("{stopped} in {} of {}", p.failed, p.runs));
    }
    let silent = if p.correct == p.runs {
        " (the bug is silent)"
    } else {
        ""
    };
    format!("{}{silent}", parts.join(", "))
}

fn plain_example(p: &PlainRuns, first_bad: &str) -> String {
    if p.correct == p.runs {
        String::new()
    } else {
        format!("The first that was not right: {first_bad}.")
    }
}

/// Which tool flagged each untouched exercise, from the record: a "which tool catches what, on
/// this GPU" table that nobody writes by hand.
fn render_tool_matrix(record: &VerificationRecord, up: &str) -> Result<String> {
    if record
        .exercises
        .iter()
        .all(|e| e.original_under_tools.is_empty())
    {
        bail!("the verification record has no survey of the untouched exercises: make it with `cargo xtask verify --survey --record book/verification.json` on a GPU");
    }
    let mut out = String::new();
    let tools = grader::exercise::manifest::Tool::ALL;
    let _ = write!(out, "| exercise | bug class |");
    for t in tools {
        let _ = write!(out, " {t} |");
    }
    let _ = writeln!(
        out,
        " plain runs right |\n| --- | --- |{}",
        " --- |".repeat(tools.len() + 1)
    );
    let mut unseen = Vec::new();
    // The performance track has no bug to catch: its originals are clean by design.
    for e in record
        .exercises
        .iter()
        .filter(|e| e.track == grader::exercise::manifest::Track::Bug)
    {
        let _ = write!(
            out,
            "| [{}]({up}lessons/{}.md) | {} |",
            e.id, e.id, e.bug_class
        );
        let mut any = false;
        for t in tools {
            let cell = match e.original_under_tools.iter().find(|s| s.tool == t) {
                None => "not run".to_string(),
                Some(s) if s.in_bug_region => {
                    any = true;
                    // The kind it reported in that region ("out-of-bounds in bug").
                    // A kind whose records name no line (a device-heap leak) is "in -".
                    let kind = s
                        .kinds
                        .iter()
                        .find_map(|k| k.strip_suffix(&format!(" in {}", e.region)))
                        .or_else(|| s.kinds.iter().find_map(|k| k.strip_suffix(" in -")))
                        .unwrap_or_default();
                    format!("**flags it** ({kind})")
                }
                Some(s) => match s.status {
                    ToolStatus::Clean => "silent".to_string(),
                    ToolStatus::Findings => format!(
                        "elsewhere: {}",
                        s.kinds
                            .iter()
                            .map(|k| k
                                .strip_suffix(" in -")
                                .map_or(k.clone(), |kind| format!("{kind} (no line)")))
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                    ToolStatus::Crashed => "no record; the program failed".to_string(),
                    ToolStatus::TimedOut => "did not finish".to_string(),
                    ToolStatus::ToolError => "the tool failed".to_string(),
                    ToolStatus::NotRun => "not run".to_string(),
                },
            };
            let _ = write!(out, " {cell} |");
        }
        let plain = e
            .plain_runs
            .map(|p| format!("{} of {}", p.correct, p.runs))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(out, " {plain} |");
        if !any && !e.original_under_tools.is_empty() {
            unseen.push(format!(
                "[{}]({up}lessons/{}.md) ({})",
                e.id, e.id, e.bug_class
            ));
        }
    }
    if unseen.is_empty() {
        let _ = writeln!(
            out,
            "\nEvery bug class here was flagged by at least one tool."
        );
    } else {
        let _ = writeln!(
            out,
            "\nNo tool flagged: {}. The cases, run plainly, are what catches these.",
            unseen.join(", ")
        );
    }
    Ok(out)
}

fn render_diff(e: &Exercise, workbook: &Path) -> String {
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
fn render_hints(e: &Exercise) -> String {
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
fn lesson_marks(e: &Exercise) -> String {
    let level = match e.level {
        Some(n) => format!("*Level {n} of 3*"),
        None => "*Level not given*".into(),
    };
    let found = match (e.finding, e.perf) {
        (Some((tool, _)), _) => format!("found with {}", tool.name()),
        (None, true) => "timed with Nsight Compute".into(),
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
/// expects `tool` to flag it, with the kind of record it expects.
fn lessons_for(exercises: &[Exercise], tool: &str, up: &str) -> Result<String> {
    let tool = grader::exercise::manifest::Tool::ALL
        .into_iter()
        .find(|t| t.name() == tool)
        .with_context(|| format!("no tool `{tool}` (memcheck, racecheck, initcheck, synccheck)"))?;
    let lessons: Vec<String> = exercises
        .iter()
        .filter_map(|e| {
            let (t, kind) = e.finding?;
            (t == tool).then(|| format!("[{}]({up}lessons/{}.md) ({})", e.id, e.id, kind.name()))
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
fn render_path(path: &LearningPath, exercises: &[Exercise], up: &str) -> String {
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
fn render_region(e: &Exercise, name: &str) -> Result<String> {
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

fn render_summary(record: &VerificationRecord, up: &str, learners: bool) -> String {
    let mut out = String::new();
    let what = if learners { "bug" } else { "intended finding" };
    let _ = writeln!(out, "| exercise | tool | {what} | plain run | original | fix | outcome |\n| --- | --- | --- | --- | --- | --- | --- |");
    for e in &record.exercises {
        let found = match (learners, e.bug_class.is_empty()) {
            (true, false) => e.bug_class.clone(),
            (true, true) => "too slow".into(),
            (false, _) => e.evidence(),
        };
        let plain = match (e.plain_runs, e.plain_run_correct) {
            (Some(p), _) => plain_runs_text(&p, stopped(e)),
            (None, Some(true)) => "right (silent)".into(),
            (None, Some(false)) => "wrong".into(),
            (None, None) => "-".into(),
        };
        let _ = writeln!(
            out,
            "| [{}]({up}lessons/{}.md) | {} | {found} | {plain} | {} | {} | {} |",
            e.id,
            e.id,
            grader::exercise::manifest::shown_by(e.tool, e.detector),
            e.original_ns().map(us).unwrap_or_else(|| stopped(e).into()),
            e.reference_ns().map(us).unwrap_or_else(|| "-".into()),
            e.outcome.label()
        );
    }
    let phases = record
        .phases
        .as_ref()
        .map(|p| format!(" ({})", grader::report::phases_text(p)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "\n`cargo xtask verify` took {:.1} s over these exercises{phases}.",
        record.wall_seconds
    );
    out
}

/// What a verdict is made of, to set two GPUs' records side by side: the outcome, the intended
/// finding (kind, tool, file and line; for the performance track only that the original is slow,
/// its speedup being a measurement), which tools saw the untouched file and how often its plain
/// runs were right.
fn verdict_key(e: &ExerciseRecord) -> String {
    let sightings: Vec<String> = e
        .original_under_tools
        .iter()
        .map(|s| format!("{}:{:?}:{}", s.tool, s.status, s.kinds.join("+")))
        .collect();
    let finding = if e.track == grader::exercise::manifest::Track::Perf {
        "slow".into()
    } else {
        e.evidence()
    };
    format!(
        "{} | {finding} | {} | {}",
        e.label(),
        sightings.join(","),
        e.plain_runs
            .map(|p| plain_runs_text(&p, stopped(e)))
            .unwrap_or_default()
    )
}

/// "H100" for "NVIDIA H100 80GB HBM3": the model, for table headings.
fn gpu_name(record: &VerificationRecord) -> String {
    let name = record
        .gpu
        .as_ref()
        .map(|g| g.name.as_str())
        .unwrap_or("no GPU");
    name.strip_prefix("NVIDIA ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or(name)
        .to_string()
}

/// `{{#cudabugs-second-gpu FILE}}`: another GPU's record of the catalog beside the book's: how many
/// verdicts are the same, every one that is not, and each exercise's times on both.
fn render_second_gpu(record: &VerificationRecord, other: &VerificationRecord) -> String {
    let (a, b) = (gpu_name(record), gpu_name(other));
    let mut out = machine(other);
    let both: Vec<(&ExerciseRecord, &ExerciseRecord)> = record
        .exercises
        .iter()
        .filter_map(|e| {
            other
                .exercises
                .iter()
                .find(|o| o.id == e.id)
                .map(|o| (e, o))
        })
        .collect();
    let same = both
        .iter()
        .filter(|(e, o)| verdict_key(e) == verdict_key(o))
        .count();
    let _ = writeln!(
        out,
        "
{same} of {} exercises got the same verdict on both GPUs: the same outcome, the same intended finding at the same line, the same tools seeing the untouched file and as many right plain runs.
",
        both.len()
    );
    for (e, o) in both
        .iter()
        .filter(|(e, o)| verdict_key(e) != verdict_key(o))
    {
        let _ = writeln!(
            out,
            "- **{}** differs: {a}: {}; {b}: {}",
            e.id,
            verdict_key(e),
            verdict_key(o)
        );
    }
    let _ = writeln!(out, "
| exercise | intended finding | fix on the {a} | fix on the {b} | {b} / {a} | speedup of the fix ({a} / {b}) |
| --- | --- | --- | --- | --- | --- |");
    for (e, o) in &both {
        let ratio = match (e.reference_ns(), o.reference_ns()) {
            (Some(x), Some(y)) => format!("{:.2}", y / x),
            _ => "-".into(),
        };
        let speedup = |r: &ExerciseRecord| {
            r.perf_version("reference")
                .map(|v| format!("{:.2}x", v.speedup))
        };
        let speedups = match (speedup(e), speedup(o)) {
            (Some(x), Some(y)) => format!("{x} / {y}"),
            _ => "-".into(),
        };
        let time = |r: &ExerciseRecord| r.reference_ns().map(us).unwrap_or_else(|| "-".into());
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {ratio} | {speedups} |",
            e.id,
            e.evidence(),
            time(e),
            time(o)
        );
    }
    let missing: Vec<&str> = record
        .exercises
        .iter()
        .filter(|e| !other.exercises.iter().any(|o| o.id == e.id))
        .map(|e| e.id.as_str())
        .collect();
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "
Not in the {b} record: {}.",
            missing.join(", ")
        );
    }
    out
}

/// Build the book under `book_root` (which holds book.toml) into `dest`, or into its configured
/// build folder.
pub fn build(book_root: &Path, workbook: &Path, dest: Option<&Path>) -> Result<PathBuf> {
    let mut book = MDBook::load(book_root).map_err(|e| anyhow::anyhow!("{e:#}"))?;
    if let Some(d) = dest {
        book.config.build.build_dir = d.to_path_buf();
    }
    book.with_preprocessor(Cudabugs {
        workbook: workbook.to_path_buf(),
    });
    book.build().map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let html = book.build_dir_for("html");
    let dead = links::dead_links(&html);
    if !dead.is_empty() {
        bail!(
            "the book has {} dead link(s):\n  {}",
            dead.len(),
            dead.join("\n  ")
        );
    }
    Ok(html)
}

/// The newest modification time under the book's sources, the exercises and the record: the
/// served book is rebuilt when it moves.
fn newest_source(book_root: &Path, workbook: &Path) -> std::time::SystemTime {
    fn walk(p: &Path, newest: &mut std::time::SystemTime) {
        let Ok(meta) = std::fs::metadata(p) else {
            return;
        };
        if let Ok(m) = meta.modified() {
            *newest = (*newest).max(m);
        }
        if meta.is_dir() {
            for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
                walk(&e.path(), newest);
            }
        }
    }
    let mut newest = std::time::UNIX_EPOCH;
    for p in [
        book_root.join("src"),
        book_root.join("book.toml"),
        book_root.join("theme"),
        book_root.join(RECORD_FILE),
        workbook.join("exercises"),
        workbook.join("solutions"),
    ] {
        walk(&p, &mut newest);
    }
    newest
}

/// Serve the built book on `addr`, rebuilding it when a source changed since the last build (checked
/// on each page request). Runs until the process is stopped.
pub fn serve(
    book_root: &Path,
    workbook: &Path,
    addr: &str,
    mut say: impl FnMut(&str),
) -> Result<()> {
    let mut built_at = newest_source(book_root, workbook);
    let mut dir = build(book_root, workbook, None)?;
    let server = tiny_http::Server::http(addr)
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
    say(&format!(
        "serving the book on http://{addr}/ (Ctrl-C to stop)"
    ));
    for request in server.incoming_requests() {
        let url = request
            .url()
            .split(['?', '#'])
            .next()
            .unwrap_or("/")
            .to_string();
        if url.ends_with('/') || url.ends_with(".html") {
            let newest = newest_source(book_root, workbook);
            if newest > built_at {
                built_at = newest;
                match build(book_root, workbook, None) {
                    Ok(d) => {
                        dir = d;
                        say("rebuilt the book");
                    }
                    Err(e) => say(&format!("the book does not build: {e:#}")),
                }
            }
        }
        let rel = normalise(Path::new(url.trim_start_matches('/')));
        let mut path = dir.join(rel);
        if path.is_dir() {
            path = path.join("index.html");
        }
        let response = match std::fs::read(&path) {
            Ok(bytes) => {
                let kind = match path.extension().and_then(|e| e.to_str()) {
                    Some("html") => "text/html; charset=utf-8",
                    Some("css") => "text/css",
                    Some("js") => "application/javascript",
                    Some("svg") => "image/svg+xml",
                    Some("png") => "image/png",
                    Some("woff2") => "font/woff2",
                    Some("json") => "application/json",
                    _ => "application/octet-stream",
                };
                tiny_http::Response::from_data(bytes).with_header(
                    tiny_http::Header::from_bytes("Content-Type", kind).expect("valid header"),
                )
            }
            Err(_) => tiny_http::Response::from_string("not found").with_status_code(404),
        };
        let _ = request.respond(response);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{distinct_lines, wrapped, LINE_CHARS};

    #[test]
    fn a_record_reported_again_with_another_count_is_shown_once() {
        // racecheck's output on 03-race (the record of 2026-11-24), two of its records, the first
        // reported again for the second launch with its hazards summed.
        let text = "========= COMPUTE-SANITIZER
========= Warning: Race reported between Write access at warp_sum+0xe50 in reduce.cu:22
=========     and Read access at warp_sum+0xf80 in reduce.cu:23 [124 hazards]
=========
========= Warning: Race reported between Write access at warp_sum+0xb90 in reduce.cu:21
=========     and Read access at warp_sum+0xcc0 in reduce.cu:22 [120 hazards]
=========
========= Warning: Race reported between Write access at warp_sum+0xe50 in reduce.cu:22
=========     and Read access at warp_sum+0xf80 in reduce.cu:23 [48484 hazards]
=========
========= RACECHECK SUMMARY: 3 hazards displayed (0 errors, 3 warnings)";
        let (kept, repeated) = distinct_lines(text);
        assert_eq!(repeated, 1);
        assert_eq!(kept.len(), 8, "{kept:#?}");
        assert!(!kept.iter().any(|l| l.contains("48484")));
        assert!(kept.last().unwrap().contains("SUMMARY"));
    }

    #[test]
    fn a_long_line_is_wrapped_at_a_space_and_nothing_is_lost() {
        let line = format!("========= Program hit cudaErrorInvalidValue (error 1) due to \"invalid argument\" on CUDA API call to cudaLaunchKernel. {}", "x".repeat(150));
        let pieces = wrapped(&line);
        assert!(
            pieces.iter().all(|p| p.chars().count() <= LINE_CHARS),
            "{pieces:#?}"
        );
        assert!(pieces[1].starts_with("    "));
        let joined: String = pieces
            .iter()
            .map(|p| p.trim())
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(joined.replace(' ', ""), line.replace(' ', ""));
        assert_eq!(wrapped("short"), vec!["short".to_string()]);
    }

    use super::*;

    #[test]
    fn includes_of_missing_files_and_anchors_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("k.cu"),
            "// ANCHOR: bug\nx;\n// ANCHOR_END: bug\n",
        )
        .unwrap();
        let chapter = dir.path().join("c.md");
        let errors = check_includes("{{#include k.cu:bug}}\n{{#include k.cu:nope}}\n{{#include gone.cu}}\n{{#include k.cu:2:3}}\n", &chapter);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("line 2:") && errors[0].contains("no anchor `nope`"));
        assert!(errors[1].starts_with("line 3:") && errors[1].contains("gone.cu"));
    }

    #[test]
    fn relative_links_must_reach_a_file_of_the_book() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tools")).unwrap();
        std::fs::write(dir.path().join("tools/memcheck.md"), "# m").unwrap();
        let mut ch = Chapter::new("L", "[ok](../tools/memcheck.md#what) [web](https://x.org) [top](#a)\n\n[bad](../tools/racecheck.md)\n".into(), "lessons/01.md", Vec::new());
        ch.source_path = Some("lessons/01.md".into());
        let errors = dead_links(&ch, dir.path());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("line 3: dead link `../tools/racecheck.md`"),
            "{errors:?}"
        );
    }

    #[test]
    fn recorded_commands_lose_the_gpu_machines_paths() {
        let c = relative_command("/usr/local/cuda/bin/compute-sanitizer --save /work/main/.cudabugs/build/x.xml /work/main/exercises/03-race/reduce.cu");
        assert_eq!(c, "/usr/local/cuda/bin/compute-sanitizer --save .cudabugs/build/x.xml exercises/03-race/reduce.cu");
    }
}
