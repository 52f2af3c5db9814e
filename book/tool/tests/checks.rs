//! The book refuses to build, naming the problem, when a lesson is missing from SUMMARY.md, an
//! include names an anchor the exercise does not mark, or a link points at a heading that does
//! not exist. Each case edits a throwaway copy of the workbook and its book.

use std::path::{Path, PathBuf};

struct Copy {
    dir: tempfile::TempDir,
}

impl Copy {
    /// A copy whose book builds no search index: a quarter of a build's time, and only the
    /// untouched book (`the_untouched_book_builds`) is searched.
    fn new() -> Copy {
        let repo = crate::repo();
        let dir = tempfile::tempdir().unwrap();
        for sub in ["book/src", "book/theme", "exercises", "solutions"] {
            grader::exercise::workbook::copy_tree(&repo.join(sub), &dir.path().join(sub)).unwrap();
        }
        // The GPU records (35 MB, 1.5 s of copying a test) are read, never edited, here: linked.
        std::os::unix::fs::symlink(
            repo.join("book/gpu-runs").canonicalize().unwrap(),
            dir.path().join("book/gpu-runs"),
        )
        .unwrap();
        for file in [
            "book/book.toml",
            "book/verification.json",
            "book/verification-h200.json",
            "book/fixes-h100.json",
            "book/fixes-h200.json",
        ] {
            std::fs::copy(repo.join(file), dir.path().join(file)).unwrap();
        }
        let copy = Copy { dir };
        copy.edit(
            "book/book.toml",
            "[output.html.search]\n",
            "[output.html.search]\nenable = false\n",
        );
        copy
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn edit(&self, rel: &str, from: &str, to: &str) {
        let text = std::fs::read_to_string(self.path(rel)).unwrap();
        assert!(text.contains(from), "{rel} has no `{from}`");
        std::fs::write(self.path(rel), text.replacen(from, to, 1)).unwrap();
    }

    /// Change one exercise's entry in one of the copy's verification records.
    fn edit_record(&self, file: &str, id: &str, change: impl FnOnce(&mut serde_json::Value)) {
        let path = self.path(file);
        let mut record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        change(
            record["exercises"]
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .find(|e| e["id"] == id)
                .unwrap(),
        );
        std::fs::write(&path, serde_json::to_string(&record).unwrap()).unwrap();
    }

    /// Remove a field from every exercise of the copy's verification record.
    fn drop_from_record(&self, field: &str) {
        let path = self.path("book/verification.json");
        let mut record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for e in record["exercises"].as_array_mut().unwrap() {
            e.as_object_mut().unwrap().remove(field);
        }
        std::fs::write(&path, serde_json::to_string(&record).unwrap()).unwrap();
    }

    fn build_error(&self) -> String {
        let out = self.path("out");
        match cudabugs_book::build(&self.path("book"), self.dir.path(), Some(&out)) {
            Ok(_) => panic!("the book built"),
            Err(e) => format!("{e:#}"),
        }
    }
}

#[test]
fn the_untouched_book_builds() {
    let (repo, html) = crate::repo_book::built();
    assert!(html.join("lessons/04-sync.html").is_file());
    the_tool_pages_come_from_the_record_and_the_manifests(html);
    each_lesson_shows_its_marks_hints_and_manual(html, repo);
    search_finds_the_lessons(html);
    the_charts_are_drawn_from_the_records(html);
    the_prose_figures_come_from_the_records(html, repo);
}

/// The figures a lesson's prose quotes from its table are filled from the record by the book tool
/// (`{{#cudabugs-value ...}}`): after a new GPU run they are the new table's.
fn the_prose_figures_come_from_the_records(html: &Path, root: &Path) {
    let perf = |file: &str, id: &str, version: &str| -> serde_json::Value {
        let record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(root.join(file)).unwrap()).unwrap();
        let e = record["exercises"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .unwrap()
            .clone();
        e["perf"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["version"] == version)
            .unwrap()
            .clone()
    };
    let metric = |v: &serde_json::Value, key: &str| {
        v["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"] == key)
            .unwrap()["value"]
            .as_f64()
            .unwrap()
    };
    let page = |id: &str| std::fs::read_to_string(html.join(format!("lessons/{id}.html"))).unwrap();
    let h100 = perf("book/verification.json", "62-launches", "reference")["speedup"]
        .as_f64()
        .unwrap();
    let h200 = perf("book/verification-h200.json", "62-launches", "reference")["speedup"]
        .as_f64()
        .unwrap();
    assert!(
        page("62-launches").contains(&format!("{h200:.2}x</strong> (the H100: {h100:.2}x)")),
        "62's prose gives the records' speedups"
    );
    let (before, after) = (
        metric(
            &perf("book/verification.json", "63-transfers", "original"),
            "kernel-share",
        ),
        metric(
            &perf("book/verification.json", "63-transfers", "reference"),
            "kernel-share",
        ),
    );
    assert!(
        page("63-transfers").contains(&format!("{before:.1}% to {after:.1}% on the H100")),
        "63's prose gives the record's kernel shares"
    );
    for entry in walk(html) {
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        assert!(
            !text.contains("{{#cudabugs-value"),
            "{} has a value left unfilled",
            entry.display()
        );
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "html") {
            files.push(p);
        }
    }
    files
}

/// The tool table (the classes no tool flagged, each tool's cell), the lessons' index and the tool
/// pages.
fn the_tool_pages_come_from_the_record_and_the_manifests(html: &Path) {
    // The tool table, from the record: the classes no tool flagged, and each tool's cell.
    let table = std::fs::read_to_string(html.join("tool-matrix.html")).unwrap();
    let unseen = &table[table
        .find("No tool flagged")
        .expect("the list of unseen classes")..];
    for id in ["13-early-return", "15-global-race", "16-uninit-shared"] {
        assert!(
            unseen[..unseen.find('\n').unwrap_or(unseen.len())].contains(id),
            "{id} is not listed as unseen"
        );
    }
    assert!(
        table.contains("<strong>flags it</strong> (shared-race)"),
        "racecheck on 03-race"
    );
    assert!(
        !table.contains("51-coalesce"),
        "the performance track has no bug for a tool to catch"
    );
    // A kind whose records name no line says so, not "in -"; a hang exercise's runs hung.
    assert!(!table.contains(" in -"), "a kind shown `in -`");
    let index = std::fs::read_to_string(html.join("lessons/index.html")).unwrap();
    let hang = &index[index.find("21-spin-flag.html").unwrap()..];
    let row = &hang[..hang.find("</tr>").unwrap()];
    assert!(row.contains("hung in") && !row.contains("crashed"), "{row}");
    // The tool pages' lessons come from the manifests: every exercise racecheck is expected to
    // flag is listed on its page, the Hopper ones included.
    let racecheck = std::fs::read_to_string(html.join("tools/racecheck.html")).unwrap();
    for id in [
        "03-race",
        "27-async-copy",
        "28-cluster-dsmem",
        "30-mbarrier-count",
    ] {
        assert!(
            racecheck.contains(&format!("../lessons/{id}.html")),
            "racecheck's page does not list {id}"
        );
    }
    // ... each with the options its manifest adds to the tool's runs.
    assert!(
        racecheck.contains("(async-copy-race, with <code>--racecheck-memcpy-async yes</code>)"),
        "racecheck's page does not give 27-async-copy's option"
    );
}

/// Each lesson: its layout picture, its marks, its hints folded in order, its manual.
fn each_lesson_shows_its_marks_hints_and_manual(html: &Path, root: &Path) {
    // Layout pictures, drawn from the lessons' `cudabugs-layout` blocks: at least ten lessons have one.
    let drawn = std::fs::read_dir(html.join("lessons"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            std::fs::read_to_string(e.path()).is_ok_and(|page| {
                page.contains("class=\"cudabugs-layout\"><svg")
                    || page.contains("class=\"cudabugs-layout\">\n<svg")
            })
        })
        .count();
    assert!(drawn >= 10, "{drawn} lessons with a layout picture");
    // Under each lesson's title, its level, what finds the bug and the GPU it needs (manifests).
    let lesson_page =
        |id: &str| std::fs::read_to_string(html.join(format!("lessons/{id}.html"))).unwrap();
    assert!(lesson_page("03-race")
        .contains("Level 2 of 3</em> · shared-memory race · found with racecheck · any CUDA GPU"));
    assert!(lesson_page("28-cluster-dsmem").contains("needs compute capability 9.0"));
    // Every lesson folds its manifest's hints one by one, in order, before the fix.
    let exercises = grader::exercise::catalog::discover(root).unwrap();
    for d in &exercises {
        let page = lesson_page(&d.manifest.id);
        let hints = d.manifest.manifest.hints.get_ref();
        let n = hints.len();
        let mut at = 0;
        for k in 1..=n {
            let summary = format!("<summary>Hint {k} of {n}</summary>");
            let found = page[at..].find(&summary).map(|i| at + i);
            at = found.unwrap_or_else(|| panic!("{}: no `{summary}` in order", d.manifest.id));
            let fold_opened = page[..at].rfind("<details>").unwrap_or(0);
            assert!(
                page[fold_opened..at]
                    .trim_start_matches("<details>")
                    .trim()
                    .is_empty(),
                "{}: hint {k} is not the first thing in its fold",
                d.manifest.id
            );
        }
        assert!(
            n == 0 || at < page.find("<summary>Show the fix</summary>").unwrap(),
            "{}: the hints come before the fix",
            d.manifest.id
        );
    }
    assert!(lesson_page("57-reduction").contains("timed with Nsight Compute"));
    // 62 and 69 are judged by the clock of the whole call, not by ncu's kernel times.
    for id in ["62-launches", "69-prefetch"] {
        assert!(
            lesson_page(id).contains("timed by the clock of the whole call"),
            "{id}"
        );
    }
    // Each lesson links to NVIDIA's manual for its tool (or Nsight Compute's guide).
    let race = std::fs::read_to_string(html.join("lessons/03-race.html")).unwrap();
    assert!(race.contains("ComputeSanitizer/index.html#racecheck-tool"));
    let reduction = std::fs::read_to_string(html.join("lessons/57-reduction.html")).unwrap();
    assert!(reduction.contains("nsight-compute/ProfilingGuide"));
}

fn search_finds_the_lessons(html: &Path) {
    // Search is on: the lessons' sections are in its index.
    let index = std::fs::read_dir(html)
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with("searchindex"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .expect("a search index (mdbook-driver's `search` feature)");
    for section in ["lessons/03-race.html#", "lessons/52-bank-conflicts.html#"] {
        assert!(
            index.contains(section),
            "{section} is not in the search index"
        );
    }
}

/// The performance lessons' rooflines and timelines, and the second GPU's comparison.
fn the_charts_are_drawn_from_the_records(html: &Path) {
    // A performance lesson: the versions' metrics from the record and the roofline drawn inline.
    let lesson = std::fs::read_to_string(html.join("lessons/52-bank-conflicts.html")).unwrap();
    let chart = &lesson[lesson
        .find("<svg width=\"720\"")
        .expect("the roofline chart")..];
    let chart = &chart[..chart.find("</svg>").expect("a whole chart")];
    assert!(
        chart.contains("Roofline of the NVIDIA")
            && chart.contains(" original ")
            && chart.contains(" the fix "),
        "the points are labelled: {chart}"
    );
    // Colours a colour-blind reader tells apart (Okabe-Ito vermillion and blue), and a shape for
    // each version (the fix a triangle), not red against green.
    assert!(
        chart.contains("#D55E00") && chart.contains("#0072B2") && chart.contains("<polygon"),
        "the versions' colours and shapes: {chart}"
    );
    assert!(
        lesson.contains("bank conflicts per shared access") && lesson.contains("the fix"),
        "the metrics table"
    );
    // The H200's record beside the H100's: the same verdict for every exercise but 04-sync, whose
    // two divergent barriers synccheck reports one or the other of (line 23 in one run, 29 in
    // another): the comparison names it rather than hide it.
    let verification = std::fs::read_to_string(html.join("verification.html")).unwrap();
    assert!(
        verification.contains("65 of 66 exercises got the same verdict on both GPUs"),
        "the second GPU's comparison"
    );
    assert_eq!(verification.matches("</strong> differs").count(), 1);
    assert!(verification.contains("04-sync</strong> differs"));
    // A call-clocked lesson: the timeline of one call of the original and of the fix, as the
    // harness recorded them on the GPU, one lane per stream.
    let lesson = std::fs::read_to_string(html.join("lessons/63-transfers.html")).unwrap();
    let chart = &lesson[lesson
        .find("<svg width=\"760\"")
        .expect("the timeline chart")..];
    let chart = &chart[..chart.find("</svg>").expect("a whole chart")];
    for label in [
        "original: one call",
        "the fix: one call",
        "default stream",
        "stream 4",
        "copy to GPU",
    ] {
        assert!(chart.contains(label), "the timeline has no `{label}`");
    }
    assert!(
        lesson.contains("copy time overlapped by kernels"),
        "the timeline metrics"
    );
}

#[test]
fn a_timeline_lesson_needs_the_recorded_calls() {
    let copy = Copy::new();
    copy.edit_record("book/verification.json", "62-launches", |launches| {
        for v in launches["perf"]["versions"].as_array_mut().unwrap() {
            v.as_object_mut().unwrap().remove("timeline");
        }
    });
    let error = copy.build_error();
    assert!(
        error.contains("lessons/62-launches.md: the timeline of 62-launches"),
        "{error}"
    );
}

/// One copy of the workbook and one build of its book for two things a whole build shows (each
/// build is about 5 s of a 2-core machine): a learner's edit of an exercise (04-sync's) changes no
/// lesson, and a verdict the H200 record tells apart from the H100's (03-race's) is named.
#[test]
fn the_lesson_shows_the_pristine_exercise_and_a_verdict_that_differs_on_the_second_gpu_is_named() {
    let copy = Copy::new();
    let file = copy.path("exercises/04-sync/smooth.cu");
    let pristine = std::fs::read_to_string(&file).unwrap();
    // A learner's edit, even one that removes the anchor, changes nothing in the book.
    std::fs::write(&file, "// my attempt, anchors gone\n").unwrap();
    copy.edit_record("book/verification-h200.json", "03-race", |race| {
        race["finding"]["locations"][0]["line"] = 23.into()
    });
    let html = cudabugs_book::build(&copy.path("book"), copy.dir.path(), Some(&copy.path("out")))
        .expect("the book builds from the pristine exercise");
    the_lesson_shows_the_pristine_exercise(&html, &pristine);
    a_verdict_that_differs_on_the_second_gpu_is_named(&html);
}

/// 04-sync's lesson shows the pristine `bug` region (`pristine`, the file before the learner's
/// edit) and folds its fix away.
fn the_lesson_shows_the_pristine_exercise(html: &Path, pristine: &str) {
    let html = std::fs::read_to_string(html.join("lessons/04-sync.html")).unwrap();
    assert!(!html.contains("my attempt"));
    // The first line inside the pristine `bug` region is on the page.
    let first = pristine
        .lines()
        .skip_while(|l| !l.contains("ANCHOR: bug"))
        .nth(1)
        .unwrap()
        .trim();
    let escaped = first
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;");
    assert!(
        html.contains(&escaped),
        "the pristine region's `{first}` is not on the page"
    );
    // The fix is folded away after "Try it yourself first".
    let try_at = html.find("Try it yourself first").expect("the prompt");
    let fix_at = html
        .find("<summary>Show the fix</summary>")
        .expect("a folded fix");
    assert!(try_at < fix_at);
}

/// The verification page counts 03-race's verdict as differing and shows both GPUs' findings.
fn a_verdict_that_differs_on_the_second_gpu_is_named(html: &Path) {
    let verification = std::fs::read_to_string(html.join("verification.html")).unwrap();
    assert!(
        verification.contains("64 of 66 exercises got the same verdict"),
        "the count"
    );
    let note = &verification[verification
        .find("03-race</strong> differs")
        .expect("the exercise named")..];
    let line = &note[..note.find('\n').unwrap()];
    assert!(
        line.contains("H100: pass | shared-race at reduce.cu:22")
            && line.contains("H200: pass | shared-race at reduce.cu:23"),
        "both findings shown: {line}"
    );
}

#[test]
fn a_performance_lesson_needs_its_performance_record() {
    let copy = Copy::new();
    copy.drop_from_record("perf");
    let error = copy.build_error();
    assert!(
        error.contains("51-coalesce has no performance record"),
        "{error}"
    );
}

#[test]
fn a_record_without_a_survey_cannot_draw_the_tool_table() {
    let copy = Copy::new();
    copy.drop_from_record("original_under_tools");
    let error = copy.build_error();
    assert!(
        error.contains("tool-matrix.md") && error.contains("verify --survey"),
        "{error}"
    );
}

#[test]
fn an_exercise_without_a_lesson_is_an_error() {
    let copy = Copy::new();
    let summary = std::fs::read_to_string(copy.path("book/src/SUMMARY.md")).unwrap();
    let line = summary
        .lines()
        .find(|l| l.contains("lessons/04-sync.md"))
        .unwrap()
        .to_string()
        + "\n";
    copy.edit("book/src/SUMMARY.md", &line, "");
    let error = copy.build_error();
    assert!(error.contains("exercise 04-sync has no lesson"), "{error}");
}

#[test]
fn code_from_a_region_the_exercise_does_not_mark_is_an_error() {
    let copy = Copy::new();
    copy.edit(
        "book/src/lessons/04-sync.md",
        "{{#cudabugs-code 04-sync bug}}",
        "{{#cudabugs-code 04-sync the-bug}}",
    );
    let error = copy.build_error();
    assert!(
        error.contains("lessons/04-sync.md") && error.contains("no region `the-bug`"),
        "{error}"
    );
}

#[test]
fn a_link_to_a_missing_heading_is_an_error() {
    let copy = Copy::new();
    copy.edit(
        "book/src/lessons/04-sync.md",
        "synccheck.md#what-it-cannot-see",
        "synccheck.md#blind-spots",
    );
    let error = copy.build_error();
    assert!(
        error.contains("lessons/04-sync.html")
            && error.contains("no heading or element with id `blind-spots`"),
        "{error}"
    );
}

#[test]
fn an_exercise_newer_than_the_record_is_said_to_be_not_yet_run_on_a_gpu() {
    let copy = Copy::new();
    // 03-race as if it had been added after the last GPU run.
    let path = copy.path("book/verification.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    record["exercises"]
        .as_array_mut()
        .unwrap()
        .retain(|e| e["id"] != "03-race");
    std::fs::write(&path, serde_json::to_string(&record).unwrap()).unwrap();
    let html =
        cudabugs_book::build(&copy.path("book"), copy.dir.path(), Some(&copy.path("out"))).unwrap();
    let lesson = std::fs::read_to_string(html.join("lessons/03-race.html")).unwrap();
    assert!(
        lesson.contains("Not yet run on a GPU.") && !lesson.contains("racecheck: no errors"),
        "the lesson invents no result"
    );
    for page in ["tool-matrix.html", "verification.html"] {
        let text = std::fs::read_to_string(html.join(page)).unwrap();
        let note = &text[text
            .find("Not yet run on a GPU (newer than this record")
            .unwrap_or_else(|| panic!("{page} names the unrecorded exercises"))..];
        assert!(
            note[..note.find('\n').unwrap_or(note.len())].contains("03-race"),
            "{page}"
        );
    }
}

#[test]
fn a_tool_page_that_names_no_tool_is_an_error() {
    let copy = Copy::new();
    copy.edit(
        "book/src/tools/memcheck.md",
        "{{#cudabugs-lessons-for memcheck}}",
        "{{#cudabugs-lessons-for memchek}}",
    );
    let error = copy.build_error();
    assert!(error.contains("no tool `memchek`"), "{error}");
}

#[test]
fn a_layout_block_that_does_not_fit_its_cells_names_its_lesson() {
    let copy = Copy::new();
    copy.edit(
        "book/src/lessons/02-bounds.md",
        "cells = \"10..12\"",
        "cells = \"10..13\"",
    );
    let error = copy.build_error();
    assert!(
        error.contains("lessons/02-bounds.md: a cudabugs-layout block")
            && error.contains("not a run inside the 12 cells"),
        "{error}"
    );
}

#[test]
fn a_value_the_record_does_not_have_is_an_error() {
    let copy = Copy::new();
    copy.edit(
        "book/src/lessons/62-launches.md",
        "{{#cudabugs-value 62-launches original kernel-share}}",
        "{{#cudabugs-value 62-launches original kernel-shares}}",
    );
    let error = copy.build_error();
    assert!(
        error.contains("lessons/62-launches.md")
            && error.contains("no figure or metric `kernel-shares`"),
        "{error}"
    );
}
