//! Numbers in prose come from the record: no lesson types a measured figure by hand (the book tool
//! fills `{{#cudabugs-value ...}}` from the records; the build test in checks.rs reads the filled
//! figures back against the record), and the few figures that are not measurements are each held
//! to where they come from.

use std::path::Path;

/// A figure a lesson may type, because it is not a measurement of a run, and what holds it.
enum Typed {
    /// The exercise's relative tolerance, as a percentage of the value (its manifest's `rtol`).
    Tolerance(&'static str),
    /// A share the exercise's tool printed, rounded (its record's `tool_output`).
    ToolOutput(&'static str),
    /// The most that rounding to half precision changes a value, 2^-11 of it, as a percentage.
    HalfRounding,
}

/// The typed figures, by lesson.
const TYPED: &[(&str, &str, Typed)] = &[
    (
        "37-shfl-width.md",
        "0.01%",
        Typed::Tolerance("37-shfl-width"),
    ),
    (
        "41-wmma-layout.md",
        "0.1%",
        Typed::Tolerance("41-wmma-layout"),
    ),
    (
        "23-oversized-scratch.md",
        "99.6%",
        Typed::ToolOutput("23-oversized-scratch"),
    ),
    ("40-half-overflow.md", "0.05%", Typed::HalfRounding),
];

/// Whether `figure`, typed in a lesson, is what its `Typed` entry says it is.
fn holds(figure: &str, typed: &Typed, repo: &Path) -> bool {
    let value: f64 = figure.trim_end_matches('%').parse().unwrap();
    match typed {
        Typed::Tolerance(id) => {
            let manifest =
                std::fs::read_to_string(repo.join("exercises").join(id).join("exercise.toml"))
                    .unwrap();
            let rtol = manifest
                .lines()
                .find_map(|l| l.strip_prefix("rtol = "))
                .and_then(|v| v.trim().parse::<f64>().ok());
            rtol.is_some_and(|r| (r * 100.0 - value).abs() < 1e-9)
        }
        Typed::ToolOutput(id) => {
            let record: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(repo.join("book/verification.json")).unwrap(),
            )
            .unwrap();
            let output = record["exercises"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["id"] == *id)
                .and_then(|e| e["tool_output"].as_str())
                .unwrap_or_default()
                .to_string();
            let decimals = figure.split_once('.').map_or(0, |(_, d)| d.len() - 1);
            output.split_whitespace().any(|w| {
                w.strip_suffix('%')
                    .and_then(|n| n.parse::<f64>().ok())
                    .is_some_and(|n| format!("{n:.decimals$}%") == figure)
            })
        }
        Typed::HalfRounding => format!("{:.2}%", 100.0 / 2048.0) == figure,
    }
}

/// No lesson types a measured figure by hand, anywhere outside its code: a percentage, a speedup,
/// a time or a rate with decimals is a `{{#cudabugs-value ...}}` of a record (the book's, another
/// GPU's, a record of other fixes or a check report), so that no figure can drift from the run it
/// cites; the few that are not measurements are in `TYPED`, each held to its source. Round limits
/// such as 0%, 100% or 2x may be written out.
#[test]
fn no_lesson_types_a_measured_figure_by_hand() {
    let repo = crate::repo();
    let lessons = repo.join("book/src/lessons");
    let mut typed = Vec::new();
    let mut read = 0;
    let mut allowed = 0;
    for entry in std::fs::read_dir(&lessons).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(|c: char| c.is_ascii_digit()) {
            continue; // the lessons' index
        }
        read += 1;
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let mut code = false;
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                code = !code;
                continue;
            }
            if code {
                continue;
            }
            let mut bare = line.to_string();
            while let Some(at) = bare.find("{{#cudabugs-value") {
                let end = bare[at..].find("}}").map_or(bare.len(), |e| at + e + 2);
                bare.replace_range(at..end, "");
            }
            for figure in decimal_figures(&bare) {
                match TYPED.iter().find(|(l, f, _)| *l == name && *f == figure) {
                    Some((_, _, source)) if holds(&figure, source, &repo) => allowed += 1,
                    Some(_) => typed.push(format!(
                        "{name}: `{figure}` no longer matches its source, in \"{}\"",
                        line.trim()
                    )),
                    None => typed.push(format!("{name}: `{figure}` in \"{}\"", line.trim())),
                }
            }
        }
    }
    assert_eq!(read, 66, "every lesson");
    assert!(typed.is_empty(), "{}", typed.join("\n"));
    assert_eq!(
        allowed,
        TYPED.len(),
        "each typed figure is still in its lesson"
    );
}

/// "12.5%", "1.7x", "3.04x", "17.3 ms", "52.5 GB/s": a number with a decimal point followed by
/// `%`, `x` or a unit of time or rate.
fn decimal_figures(line: &str) -> Vec<String> {
    const UNITS: [&str; 8] = [
        " µs", " us", " ms", " ns", " GB/s", " TB/s", " GFLOP/s", " TFLOP/s",
    ];
    let mut figures = Vec::new();
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            let number = &line[start..i];
            if !number.trim_end_matches('.').contains('.') {
                continue;
            }
            let rest = &line[i..];
            let word_ends = |n: usize| {
                rest[n..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric())
            };
            if rest.starts_with('%') || (rest.starts_with('x') && word_ends(1)) {
                figures.push(format!("{number}{}", &rest[..1]));
            } else if let Some(unit) = UNITS
                .iter()
                .find(|u| rest.starts_with(*u) && word_ends(u.len()))
            {
                figures.push(format!("{number}{unit}"));
            }
        } else {
            i += 1;
        }
    }
    figures
}

#[test]
fn decimal_figures_are_the_measured_kind() {
    assert_eq!(
        decimal_figures(
            "at 12.5% and 3.04x, 17.3 ms, 0.4 ms and 52.5 GB/s; not 100%, 16 x 16, 2x, 0x1f, \
             7 ms, 1.5.6 xs or 2.5 msec"
        ),
        ["12.5%", "3.04x", "17.3 ms", "0.4 ms", "52.5 GB/s"]
    );
}

/// The README's table of the performance track gives each fix's speedup on the H100 and the H200
/// ("(3.72x / 5.30x)"): typed there, so a test holds each to the book's records, at the precision
/// it is written with.
#[test]
fn the_readme_s_speedups_are_the_records() {
    let repo = crate::repo();
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    // The fix's speedup, and its share of cuBLAS where it has one.
    let speedups = |file: &str| -> std::collections::BTreeMap<String, (f64, Option<f64>)> {
        let record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(repo.join("book").join(file)).unwrap())
                .unwrap();
        record["exercises"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| {
                let fix = e["perf"]["versions"]
                    .as_array()?
                    .iter()
                    .find(|v| v["version"] == "reference")?;
                let cublas = fix["metrics"]
                    .as_array()?
                    .iter()
                    .find(|m| m["metric"] == "share-of-baseline")
                    .and_then(|m| m["value"].as_f64());
                Some((
                    e["id"].as_str()?.to_string(),
                    (fix["speedup"].as_f64()?, cublas),
                ))
            })
            .collect()
    };
    let (h100, h200) = (
        speedups("verification.json"),
        speedups("verification-h200.json"),
    );
    let mut rows = 0;
    let mut wrong = Vec::new();
    for line in readme.lines() {
        let Some(id) = line
            .strip_prefix("| `")
            .and_then(|l| l.split_once('`'))
            .map(|(id, _)| id.to_string())
            .filter(|id| h100.contains_key(id))
        else {
            continue;
        };
        let figures = line
            .trim_end_matches(|c: char| c == '|' || c.is_whitespace())
            .rsplit_once('(')
            .and_then(|(_, f)| f.strip_suffix(')'))
            .unwrap_or_else(|| panic!("no (H100 / H200) in {line}"));
        let (a, b) = figures.split_once(" / ").unwrap();
        let first = |s: &str| {
            s.split([',', ' '])
                .next()
                .unwrap()
                .trim_end_matches('x')
                .to_string()
        };
        for (part, record, gpu) in [(a, &h100, "H100"), (b, &h200, "H200")] {
            let typed = first(part);
            let decimals = typed.split_once('.').map_or(0, |(_, d)| d.len());
            let (speedup, cublas) = record[&id];
            let measured = format!("{speedup:.decimals$}");
            if measured != typed {
                wrong.push(format!(
                    "{id} on the {gpu}: README {typed}x, record {measured}x"
                ));
            }
            // "5.67x, 60% of cuBLAS": the share as the record has it, to the percent.
            if let Some(share) = part
                .split_once(", ")
                .and_then(|(_, s)| s.strip_suffix("% of cuBLAS"))
            {
                let measured = cublas.map(|c| format!("{c:.0}"));
                if measured.as_deref() != Some(share) {
                    wrong.push(format!(
                        "{id} on the {gpu}: README {share}% of cuBLAS, record {measured:?}"
                    ));
                }
            }
        }
        rows += 1;
    }
    assert_eq!(rows, 21, "the performance track's rows");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
