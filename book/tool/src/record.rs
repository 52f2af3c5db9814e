//! An exercise's GPU record as its lesson shows it: the machine, the tool's output without its
//! repeats, how the grader read it, the plain runs, the checks and the times.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use grader::judge::verdict::Status;
use grader::plans::verify::{ExerciseRecord, PlainRuns, VerificationRecord};

use crate::RECORD_FILE;

/// A lesson's place for the GPU record of an exercise the committed record does not have.
pub(crate) fn not_yet_run(id: &str) -> String {
    format!(
        "> **Not yet run on a GPU.** {id} is newer than the committed verification record (`book/{RECORD_FILE}`), so this \
         page shows no tool output, timings or verdict yet: they appear here once `cargo xtask verify --survey --record \
         book/{RECORD_FILE}` has run on a GPU.\n"
    )
}

pub(crate) fn machine(record: &VerificationRecord) -> String {
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

pub(crate) fn us(ns: f64) -> String {
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

/// An exercise's GPU record on its lesson: the machine, the tool and how to run it, what the tool
/// printed and how the grader read it, the plain runs, the grader's checks, and the times.
pub(crate) fn render_record(
    record: &VerificationRecord,
    r: &ExerciseRecord,
    source: &str,
    original: &str,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", machine(record));
    manual_and_how_to_run(&mut out, r, source);
    tool_output(&mut out, r);
    grader_reading(&mut out, r);
    plain_runs(&mut out, r);
    how_verified(&mut out, r);
    if let Some(p) = &r.perf {
        out.push_str(&render_perf(p, original));
    }
    ncu_times(&mut out, r);
    out
}

/// NVIDIA's manual for the exercise's tool (or ncu's guide, for a performance exercise), and the
/// commands that run the tool on the learner's file.
fn manual_and_how_to_run(out: &mut String, r: &ExerciseRecord, source: &str) {
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
}

/// What the tool printed on the untouched exercise, without repeated records: its first
/// `SHOWN_LINES` open and the whole folded below, where it is longer.
fn tool_output(out: &mut String, r: &ExerciseRecord) {
    let Some(text) = &r.tool_output else {
        return;
    };
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

/// The finding the grader read from the tool's output, where it has one.
fn grader_reading(out: &mut String, r: &ExerciseRecord) {
    let Some(f) = &r.finding else {
        return;
    };
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

/// How the plain `-O3` runs of the untouched exercise went: several (a newer record) or one.
fn plain_runs(out: &mut String, r: &ExerciseRecord) {
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
}

/// How the grader verified it: its command and every check, for the curious and for authors.
fn how_verified(out: &mut String, r: &ExerciseRecord) {
    let _ = writeln!(
        out,
        "<details>\n<summary>How this was verified: the grader's command and checks</summary>\n"
    );
    let tool_step = r.checks.iter().find(|c| c.is_exercise_under_tool());
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
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            c.name,
            status_word(c.status),
            c.summary.replace('|', "\\|")
        );
    }
    let _ = writeln!(out, "\n</details>\n");
}

/// A check's result in the table; the ones that are not as planned in bold.
fn status_word(status: Status) -> &'static str {
    match status {
        Status::Passed => "passed",
        Status::Failed => "**failed**",
        Status::TimedOut => "**timed out**",
        Status::Hung => "**hung**",
        Status::ToolError => "**tool error**",
        Status::Skipped => "skipped",
    }
}

/// ncu's times of the original and the fix (and of the fix in a second process), and the ratio a
/// learner's fix must keep.
fn ncu_times(out: &mut String, r: &ExerciseRecord) {
    let Some(t) = &r.timing else {
        return;
    };
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

/// A performance exercise's versions side by side, with the metrics in plain words.
fn render_perf(p: &grader::judge::perf::PerfSummary, original: &str) -> String {
    let mut out = String::new();
    let name = |v: &str| match v {
        "original" => "original (slow)".to_string(),
        "reference" => "the fix".to_string(),
        other => other.to_string(),
    };
    let _ = writeln!(out, "\nncu of {}, base clocks, caches flushed, the median of the bench's repeats; shares are of this GPU's measured peak (memcpy {:.0} GB/s, fp32 FMA {:.1} TFLOP/s under ncu):\n", kernels_named(&p.kernels, original), p.peak.memcpy_gbps, p.peak.fma_ncu_gflops / 1e3);
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
    // What `check` prints under its table, word for word: marked, so that the book's spoiler test
    // reads it as the grader's output (a metric's meaning may name a technique, "16 for float4
    // loads"), which a learner has seen before opening the lesson.
    out.push_str("<div class=\"cudabugs-check-says\">\n\n");
    for m in &p.shown {
        let _ = writeln!(out, "- **{}**: {}.", m.label(), m.plain());
    }
    out.push_str("\n</div>\n");
    out
}

/// The timed kernels that the untouched exercise has, in code: a kernel only the fix has (its
/// fused or added kernel) would name the fix above its fold.
fn kernels_named(kernels: &[String], original: &str) -> String {
    let has = |k: &str| {
        original.match_indices(k).any(|(at, _)| {
            let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
            !original[..at].ends_with(ident) && !original[at + k.len()..].starts_with(ident)
        })
    };
    let shown: Vec<&str> = kernels
        .iter()
        .map(String::as_str)
        .filter(|k| has(k))
        .collect();
    let named = format!("`{}`", shown.join("`, `"));
    match (shown.is_empty(), shown.len() < kernels.len()) {
        (true, _) => "the exercise's kernels".into(),
        (false, false) => named,
        (false, true) => format!("{named} (and the fix's own kernels)"),
    }
}

/// What became of a run that did not finish: a hang exercise's runs hung (killed at its limit),
/// any other's crashed.
pub(crate) fn stopped(e: &ExerciseRecord) -> &'static str {
    if e.detector == grader::exercise::manifest::Detector::Hang {
        "hung"
    } else {
        "crashed"
    }
}

/// "right in 5 of 5 (the bug is silent)", "wrong in 5 of 5", "right in 2 of 5, wrong in 3",
/// "hung in 5 of 5" (`stopped`: the word for a run that did not finish).
pub(crate) fn plain_runs_text(p: &PlainRuns, stopped: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn recorded_commands_lose_the_gpu_machines_paths() {
        let c = relative_command("/usr/local/cuda/bin/compute-sanitizer --save /work/main/.cudabugs/build/x.xml /work/main/exercises/03-race/reduce.cu");
        assert_eq!(c, "/usr/local/cuda/bin/compute-sanitizer --save .cudabugs/build/x.xml exercises/03-race/reduce.cu");
    }
}
