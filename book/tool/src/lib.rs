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
//! - `{{#cudabugs-roofline ID}}`: a performance exercise's roofline (inline SVG, plotters) from the record
//!   (`all`: every kernel-clocked one on one chart, the primer's);
//! - `{{#cudabugs-timeline ID}}`: a call-clocked exercise's timeline, one call of the original and
//!   one of the fix on the same scale (inline SVG), from the record;
//! - `{{#cudabugs-tool-matrix}}`: which tool flagged which exercise's untouched file, how often a
//!   plain run was right, and the bug classes no tool flagged, all from the record;
//! - `{{#cudabugs-path}}`: the map of the learning path (`exercises/path.toml`): its chapters in
//!   order, what each teaches and its lessons by level. The table of contents must follow the path.

mod fixes;
mod layout;
mod lesson;
mod links;
mod record;
mod roofline;
mod search;
mod server;
mod sources;
mod tables;
mod timeline;
mod values;

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use grader::exercise::path::{LearningPath, Stop};
use grader::plans::verify::{ExerciseRecord, VerificationRecord};
use mdbook_driver::MDBook;
use mdbook_preprocessor::book::{Book, BookItem, Chapter};
use mdbook_preprocessor::{Preprocessor, PreprocessorContext};

use lesson::{lesson_marks, lessons_for, render_diff, render_hints, render_path, render_region};
use record::{machine, not_yet_run, render_record};
pub use server::serve;
use tables::{render_second_gpu, render_summary, render_tool_matrix, unrecorded};

pub const RECORD_FILE: &str = "verification.json";
/// The preprocessor. `workbook` is the folder with exercises/ and solutions/.
pub struct Cudabugs {
    pub workbook: PathBuf,
    /// For the search index alone: the chapters without their folds (see `search`).
    pub search_only: bool,
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
    /// A performance exercise timed by the clock of the whole call, not by ncu's kernel times.
    call_clock: bool,
    /// What is wrong, in the manifest's words: what a reader searches for.
    bug_class: String,
    /// The manifest's hints, from the first nudge to the last.
    hints: Vec<String>,
    /// The tool that flags the untouched exercise, and the kind of its record (the manifest's).
    finding: Option<(
        grader::exercise::manifest::Tool,
        grader::exercise::manifest::FindingKind,
    )>,
    /// The compute-sanitizer options the manifest adds for that tool's runs (`[expect] options`).
    tool_options: Vec<String>,
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
                tool_options: d
                    .manifest
                    .expected_finding()
                    .map(|(tool, _)| d.manifest.tool_options(tool).to_vec())
                    .unwrap_or_default(),
                level: d.manifest.level(),
                requires: d.manifest.requires().map(|c| c.to_string()),
                perf: d.manifest.manifest.perf.is_some(),
                call_clock: d
                    .manifest
                    .manifest
                    .perf
                    .as_ref()
                    .is_some_and(|p| p.clock == grader::exercise::manifest::Clock::Call),
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
                    sources::check_includes(&raw, &src.join(&source))
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
                Ok(text) if self.search_only => chapter.content = search::without_folds(&text),
                Ok(text) => chapter.content = text,
                Err(e) => errors.push(format!("{name}: {e}")),
            }
            errors.extend(
                sources::dead_links(chapter, &src)
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
/// A chapter's text as the book shows it: its directives rendered, its layout blocks drawn, and a
/// lesson's place on the path under its title.
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
    let page = Page {
        record,
        exercises,
        path,
        workbook,
        up,
    };
    // A lesson says under its title where it sits on the path and what it needs (its manifest's).
    let lesson = exercises
        .iter()
        .find(|e| chapter.path.as_deref() == Some(Path::new(&e.chapter)));
    let mut marked = false;
    // The records this page's values come from, each read once.
    let mut sources: std::collections::HashMap<String, std::rc::Rc<values::Source>> =
        std::collections::HashMap::new();
    // A fenced `cudabugs-layout` block is the data of a picture: drawn here as SVG.
    let mut layout: Option<String> = None;
    for line in chapter.content.lines() {
        if let Some(spec) = layout.as_mut() {
            if line.trim() == "```" {
                out.push_str(&layout_picture(spec)?);
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
        let filled = values::fill(line, &mut |file| {
            let key = file.unwrap_or_default().to_string();
            if let Some(source) = sources.get(&key) {
                return Ok(source.clone());
            }
            let source = std::rc::Rc::new(page.record_named(file)?);
            sources.insert(key, source.clone());
            Ok(source)
        })?;
        let line = filled.as_str();
        let t = line.trim();
        let Some(inner) = t
            .strip_prefix("{{#cudabugs-")
            .and_then(|r| r.strip_suffix("}}"))
        else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        out.push_str(&page.directive(inner)?);
    }
    if layout.is_some() {
        bail!("a cudabugs-layout block is not closed with ```");
    }
    Ok(tables::bind_units(&out))
}

/// A closed `cudabugs-layout` block's picture, set apart from the text around it.
fn layout_picture(spec: &str) -> Result<String> {
    // One message: the book's problem list shows each error's first line.
    let picture =
        layout::svg(spec).map_err(|e| anyhow::anyhow!("a cudabugs-layout block: {e:#}"))?;
    Ok(format!(
        "\n<div class=\"cudabugs-layout\">\n{picture}</div>\n\n"
    ))
}

/// What a chapter's directives are rendered from; `up` leads from the chapter to the book's root.
struct Page<'a> {
    record: &'a VerificationRecord,
    exercises: &'a [Exercise],
    path: &'a LearningPath,
    workbook: &'a Path,
    up: &'a str,
}

impl<'a> Page<'a> {
    /// The text of one directive, `{{#cudabugs-INNER}}`.
    fn directive(&self, inner: &str) -> Result<String> {
        let (record, exercises, up) = (self.record, self.exercises, self.up);
        let mut words = inner.split_whitespace();
        let (what, id) = (words.next().unwrap_or(""), words.next());
        Ok(match what {
            "record" => match self.exercise(id)? {
                (Some(r), e) => {
                    let source = e
                        .exercise
                        .strip_prefix(self.workbook)
                        .unwrap_or(&e.exercise)
                        .display()
                        .to_string();
                    render_record(record, r, &source, &e.original)
                }
                (None, e) => not_yet_run(&e.id),
            },
            "diff" => render_diff(self.exercise(id)?.1, self.workbook),
            "hints" => render_hints(self.exercise(id)?.1),
            "code" => {
                let (_, e) = self.exercise(id)?;
                let region = words
                    .next()
                    .context("the directive needs a region name: {{#cudabugs-code ID REGION}}")?;
                render_region(e, region)?
            }
            "summary" => {
                // `{{#cudabugs-summary lessons}}`: the learners' index names each bug's class, not
                // its line; the GPU record's table (no word) keeps the finding where it was seen.
                let learners = id == Some("lessons");
                render_summary(record, up, learners) + &unrecorded(record, exercises, up)
            }
            "lessons-for" => {
                // A tool page's lessons, from the manifests: the list cannot go stale.
                let tool =
                    id.context("the directive needs a tool: {{#cudabugs-lessons-for TOOL}}")?;
                lessons_for(exercises, tool, up)?
            }
            "machine" => machine(record),
            "path" => render_path(self.path, exercises, up),
            "second-gpu" => self.second_gpu(id)?,
            "tool-matrix" => render_tool_matrix(record, up)? + &unrecorded(record, exercises, up),
            "roofline" | "timeline" => self.chart(what, id)?,
            other => bail!("unknown directive `{{{{#cudabugs-{other}}}}}`"),
        })
    }

    /// An exercise of the catalog that the committed record does not have yet (added since the
    /// last GPU run) has no record: its lesson says so rather than showing anything invented.
    fn exercise(&self, id: Option<&str>) -> Result<(Option<&'a ExerciseRecord>, &'a Exercise)> {
        let id = id.context("the directive needs an exercise id")?;
        let e = self
            .exercises
            .iter()
            .find(|e| e.id == id)
            .with_context(|| format!("no exercise {id}"))?;
        Ok((self.record.exercises.iter().find(|r| r.id == id), e))
    }

    /// The book's record, or (`Some(FILE)`) the one in `book/FILE`: a check report (one with
    /// `steps`), a record of other fixes (one with `fixes`), or a verification record.
    fn record_named(&self, file: Option<&str>) -> Result<values::Source> {
        let Some(file) = file else {
            return Ok(values::Source::Verified(self.record.clone()));
        };
        let path = self.workbook.join("book").join(file);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let json: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON", path.display()))?;
        Ok(
            if json.get("steps").is_some() && json.get("exercise").is_some() {
                values::Source::Check(json)
            } else if json.get("fixes").is_some() {
                values::Source::Fixes(
                    serde_json::from_value(json)
                        .with_context(|| format!("{} is not a record of fixes", path.display()))?,
                )
            } else {
                values::Source::Verified(
                    serde_json::from_value(json).with_context(|| {
                        format!("{} is not a verification record", path.display())
                    })?,
                )
            },
        )
    }

    /// The same catalog verified on another GPU (`book/FILE`), set against the book's record.
    fn second_gpu(&self, file: Option<&str>) -> Result<String> {
        let file = file.context(
            "the directive needs the second record's file: {{#cudabugs-second-gpu FILE}}",
        )?;
        let path = self.workbook.join("book").join(file);
        let other: VerificationRecord = serde_json::from_str(
            &std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?,
        )
        .with_context(|| format!("{} is not a verification record", path.display()))?;
        Ok(render_second_gpu(self.record, &other))
    }

    /// Charts from the record, inline so they travel with the page; one line, so Markdown leaves
    /// them whole.
    fn chart(&self, what: &str, id: Option<&str>) -> Result<String> {
        // `{{#cudabugs-roofline all}}`: the primer's chart, every kernel-clocked exercise at once.
        if what == "roofline" && id == Some("all") {
            let all: Vec<(&str, &grader::judge::perf::PerfSummary)> = self
                .record
                .exercises
                .iter()
                .filter_map(|r| Some((r.id.as_str(), r.perf.as_ref()?)))
                .filter(|(_, p)| p.clock == grader::exercise::manifest::Clock::Kernel)
                .collect();
            let svg = roofline::svg_all(&all).context("the roofline of every exercise")?;
            return Ok(chart(&svg));
        }
        let (Some(r), _) = self.exercise(id)? else {
            return Ok(not_yet_run(id.unwrap_or_default()));
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
        Ok(chart(&svg))
    }
}

/// A chart on one line (so that markdown leaves it whole), in the box that lets a phone scroll it
/// at a legible size (`.cudabugs-chart` in the theme).
fn chart(svg: &str) -> String {
    format!(
        "<div class=\"cudabugs-chart\">{}</div>\n",
        svg.replace('\n', " ")
    )
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
        search_only: false,
    });
    book.build().map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let html = book.build_dir_for("html");
    // A book.toml that turns search off (`[output.html.search] enable = false`) has no index to
    // replace, and so no second build.
    let searched = book
        .config
        .get::<bool>("output.html.search.enable")
        .map_err(|e| anyhow::anyhow!("{e:#}"))?
        .unwrap_or(true);
    if searched {
        search::index_without_folds(book_root, workbook, &html)?;
    }
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
