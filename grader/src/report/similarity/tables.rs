//! The similarity report as tables: `similarity.csv`, `similarity.md` and its section of
//! `summary.md`.

use std::fmt::Write as _;

use super::{Pair, SimilarityConfig, SimilarityReport};

fn share(x: f64) -> String {
    format!("{x:.3}")
}

/// `similarity.csv`: every compared pair at or above the list floor, most similar first.
pub fn to_csv(report: &SimilarityReport) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "exercise",
        "student_a",
        "student_b",
        "similarity",
        "shared_kgrams",
        "own_kgrams_a",
        "own_kgrams_b",
        "jaccard",
    ]);
    let mut pairs: Vec<&Pair> = report.exercises.iter().flat_map(|e| &e.pairs).collect();
    pairs.sort_by(|x, y| {
        y.similarity
            .total_cmp(&x.similarity)
            .then(y.jaccard.total_cmp(&x.jaccard))
            .then_with(|| {
                (&x.exercise, &x.student_a, &x.student_b).cmp(&(
                    &y.exercise,
                    &y.student_a,
                    &y.student_b,
                ))
            })
    });
    for p in pairs {
        let _ = w.write_record([
            p.exercise.clone(),
            p.student_a.clone(),
            p.student_b.clone(),
            share(p.similarity),
            p.shared.to_string(),
            p.own_a.to_string(),
            p.own_b.to_string(),
            share(p.jaccard),
        ]);
    }
    String::from_utf8_lossy(&w.into_inner().unwrap_or_default()).into_owned()
}

/// The method in a few sentences, for `similarity.md`.
pub fn method(cfg: &SimilarityConfig) -> String {
    format!(
        "Each submission's marked regions are cut into tokens: comments and white space dropped, literals and numbers kept, \
         C++/CUDA keywords and well-known CUDA names (`threadIdx`, `__syncthreads`, `atomicAdd`, `float4`, ...) kept, every other \
         name a placeholder numbered by first appearance, so renaming variables does not hide a copy. Runs of {k} tokens (k-grams) \
         are hashed. The k-grams of the exercise's untouched file and of the reference solution are removed (submitting either is \
         not copying a classmate), and so are those more than max({cm}, {cs:.0}% of the submissions) share. A pair is compared when \
         both keep at least {min} own k-grams; its similarity is the share of the smaller set that the other holds too \
         (Jaccard beside it). Pairs at or above {t:.2} are listed here; `similarity.csv` has every compared pair at or above {f:.2}.",
        k = cfg.k,
        cm = cfg.common_min,
        cs = cfg.common_share * 100.0,
        min = cfg.min_own,
        t = cfg.threshold,
        f = cfg.list_floor,
    )
}

/// `similarity.md`: the flagged pairs and how they were found.
pub fn to_markdown(report: &SimilarityReport) -> String {
    let cfg = &report.config;
    let mut md = String::from("# Similarity of submissions\n\n");
    md.push_str("**A flag for a person to review, never a grade:** no points change because of this report. Similar code can have innocent causes (a hint followed closely, the same textbook idiom, partners who were allowed to work together); open both files before drawing any conclusion.\n\n");
    let flagged: Vec<&Pair> = report.flagged().collect();
    let _ = writeln!(md, "## Pairs at or above {:.2}\n", cfg.threshold);
    if flagged.is_empty() {
        md.push_str("None.\n\n");
    } else {
        md.push_str("| exercise | student a | student b | similarity | shared k-grams | own k-grams a | own k-grams b | Jaccard |\n|---|---|---|---|---|---|---|---|\n");
        for p in &flagged {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.2} | {} | {} | {} | {:.2} |",
                p.exercise,
                p.student_a,
                p.student_b,
                p.similarity,
                p.shared,
                p.own_a,
                p.own_b,
                p.jaccard
            );
        }
        md.push('\n');
    }
    md.push_str("## Per exercise\n\n| exercise | files read | with enough own code | pairs flagged | highest similarity |\n|---|---|---|---|---|\n");
    for e in &report.exercises {
        let highest = e
            .pairs
            .first()
            .map(|p| format!("{:.2} ({} / {})", p.similarity, p.student_a, p.student_b))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            e.exercise,
            e.students.len(),
            e.compared(cfg),
            e.flagged(cfg).count(),
            highest
        );
    }
    if !report.missing.is_empty() {
        let _ = writeln!(
            md,
            "\nNot compared (not in this workbook, or not loadable): {}.",
            report.missing.join(", ")
        );
    }
    md.push_str("\n## Method\n\n");
    md.push_str(&method(cfg));
    md.push_str("\n\n![similarity heat map](similarity.svg)\n");
    md
}

/// The section of `summary.md` that links the report.
pub fn summary_section(report: &SimilarityReport) -> String {
    let flagged = report.flagged().count();
    let exercises = report
        .exercises
        .iter()
        .filter(|e| e.flagged(&report.config).next().is_some())
        .count();
    let mut md = String::from("## Similarity (a flag for review, not a grade)\n\n");
    if flagged == 0 {
        let _ = writeln!(
            md,
            "No pair of submissions reached {:.2} similarity of their own code.",
            report.config.threshold
        );
    } else {
        let _ = writeln!(md, "{flagged} pair(s) of submissions in {exercises} exercise(s) at or above {:.2} similarity of their own code (names, comments and white space normalised; the workbook's code and the reference excluded).", report.config.threshold);
    }
    md.push_str("The pairs and the method: [similarity.md](similarity.md); every compared pair: [similarity.csv](similarity.csv). No points change because of it.\n\n");
    md.push_str("![similarity heat map](similarity.svg)\n");
    md
}
