//! Numbers in prose come from the record: where a performance lesson reads its table, no measured
//! figure is typed by hand (the book tool fills `{{#cudabugs-value ...}}` from the record; the
//! build test in checks.rs reads the filled figures back against the record).

use std::path::Path;

/// Where a performance lesson reads its table ("What the grader measured", "How to read it"), a
/// measured figure, a percentage or a speedup with decimals, is never typed by hand: it is a
/// `{{#cudabugs-value ...}}` of the record (round limits such as 0% or 100% may be written out).
#[test]
fn a_performance_lesson_types_no_measured_figure_by_hand() {
    let lessons = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../book/src/lessons");
    let mut typed = Vec::new();
    for entry in std::fs::read_dir(&lessons).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        if !text.contains("{{#cudabugs-roofline") && !text.contains("{{#cudabugs-timeline") {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        for section in text.split("\n## ").filter(|s| {
            s.starts_with("What the grader measured") || s.starts_with("How to read it")
        }) {
            let mut folded = 0;
            let mut code = false;
            for line in section.lines() {
                folded += line.matches("<details>").count();
                folded -= line.matches("</details>").count().min(folded);
                code ^= line.trim_start().starts_with("```");
                if folded > 0 || code || line.starts_with('|') {
                    continue;
                }
                let mut bare = line.to_string();
                while let Some(at) = bare.find("{{#cudabugs-value") {
                    let end = bare[at..].find("}}").map_or(bare.len(), |e| at + e + 2);
                    bare.replace_range(at..end, "");
                }
                for figure in decimal_figures(&bare) {
                    typed.push(format!("{name}: `{figure}` in \"{}\"", line.trim()));
                }
            }
        }
    }
    assert!(typed.is_empty(), "{}", typed.join("\n"));
}

/// "12.5%", "1.7x", "3.04x": a number with a decimal point followed by `%` or `x`.
fn decimal_figures(line: &str) -> Vec<String> {
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
            let unit = b.get(i).copied();
            let word_ends = b.get(i + 1).is_none_or(|c| !c.is_ascii_alphanumeric());
            if number.trim_end_matches('.').contains('.')
                && (unit == Some(b'%') || (unit == Some(b'x') && word_ends))
            {
                figures.push(format!("{}{}", number, unit.unwrap() as char));
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
        decimal_figures("at 12.5% and 3.04x, not 100%, 16 x 16, 2x or 0x1f; 1.5.6 xs"),
        ["12.5%", "3.04x"]
    );
}
