//! `similarity.svg`: a heat map per exercise of how similar its students' own code is.

use std::collections::HashMap;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{ExerciseSimilarity, SimilarityConfig, SimilarityReport};
use crate::report::SvgDrawError;

/// A cell of the map, the room for the students' names left of it, and for the title above it.
const CELL: i32 = 12;
const LABEL: i32 = 130;
const HEAD: i32 = 40;
/// Where the panels start, below the title and the legend.
const TOP: i32 = 72;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// The students of an exercise's heat map: all of them up to `heat_max`, else those of the most
/// similar pairs. Indices into `e.students`, in roster order.
pub(super) fn heat_students(e: &ExerciseSimilarity, cfg: &SimilarityConfig) -> Vec<usize> {
    if e.students.len() <= cfg.heat_max {
        return (0..e.students.len()).collect();
    }
    let index: HashMap<&str, usize> = e
        .students
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i))
        .collect();
    let mut chosen: Vec<usize> = Vec::new();
    for p in &e.pairs {
        for s in [&p.student_a, &p.student_b] {
            let i = index[s.as_str()];
            if chosen.len() < cfg.heat_max && !chosen.contains(&i) {
                chosen.push(i);
            }
        }
    }
    chosen.sort_unstable();
    chosen
}

/// `similarity.svg`: a heat map per exercise (students by students, white 0 to red 1; grey where a
/// student has too little own code to compare; a black box at or above the threshold).
pub fn heatmap_svg(report: &SimilarityReport) -> Result<String, SvgDrawError> {
    let cfg = &report.config;
    let shown: Vec<(&ExerciseSimilarity, Vec<usize>)> = report
        .exercises
        .iter()
        .map(|e| (e, heat_students(e, cfg)))
        .filter(|(_, s)| s.len() >= 2)
        .collect();
    let most = shown.iter().map(|(_, s)| s.len()).max().unwrap_or(0) as i32;
    let (panel_w, panel_h) = (LABEL + most * CELL + 20, HEAD + most * CELL + 20);
    let columns = shown.len().clamp(1, 3) as i32;
    let rows = (shown.len() as i32 + columns - 1) / columns;
    let width = (columns * panel_w).max(640);
    let height = TOP + rows.max(1) * panel_h.max(60);
    let mut out = String::new();
    {
        let root =
            SVGBackend::with_string(&mut out, (width as u32, height as u32)).into_drawing_area();
        root.fill(&WHITE)?;
        heading(&root, cfg, shown.is_empty())?;
        for (k, (e, students)) in shown.iter().enumerate() {
            let origin = (
                (k as i32 % columns) * panel_w,
                TOP + (k as i32 / columns) * panel_h,
            );
            panel(&root, cfg, e, students, origin)?;
        }
        root.present()?;
    }
    Ok(out)
}

/// The title, the legend, and (where no exercise has a map) why there is none.
fn heading(root: &Area, cfg: &SimilarityConfig, nothing_shown: bool) -> Result<(), SvgDrawError> {
    root.draw(&Text::new(
        "Similarity of submissions (flags for review, not grades)",
        (10, 8),
        ("sans-serif", 18).into_font(),
    ))?;
    let legend = [
        format!("colour: similarity of the students' own code, 0 (white) to 1 (red); boxed: at or above {:.2}.", cfg.threshold),
        "grey: too little own code to compare. Rows and columns are the same students, numbered.".to_string(),
    ];
    for (line, text) in legend.into_iter().enumerate() {
        root.draw(&Text::new(
            text,
            (10, 32 + 16 * line as i32),
            ("sans-serif", 12).into_font(),
        ))?;
    }
    if nothing_shown {
        root.draw(&Text::new(
            "No exercise has two submissions to compare.",
            (10, TOP + 10),
            ("sans-serif", 14).into_font(),
        ))?;
    }
    Ok(())
}

/// An exercise's map with its top left corner at `(x0, y0)`: its title, the students numbered down
/// the side and across the top, a cell per pair, a frame.
fn panel(
    root: &Area,
    cfg: &SimilarityConfig,
    e: &ExerciseSimilarity,
    students: &[usize],
    (x0, y0): (i32, i32),
) -> Result<(), SvgDrawError> {
    let n = students.len() as i32;
    let title = if students.len() < e.students.len() {
        format!("{} ({} of {} students)", e.exercise, n, e.students.len())
    } else {
        e.exercise.clone()
    };
    root.draw(&Text::new(
        title,
        (x0 + 10, y0 + 4),
        ("sans-serif", 14).into_font(),
    ))?;
    let (gx, gy) = (x0 + LABEL, y0 + HEAD);
    let similarity = pair_similarities(e);
    for (r, &i) in students.iter().enumerate() {
        let y = gy + r as i32 * CELL;
        student_labels(root, &e.students[i], r, n, (gx, gy))?;
        for (c, &j) in students.iter().enumerate() {
            let x = gx + c as i32 * CELL;
            cell(root, cfg, e, &similarity, (i, j), (x, y))?;
        }
    }
    root.draw(&Rectangle::new(
        [(gx, gy), (gx + n * CELL, gy + n * CELL)],
        RGBColor(160, 160, 160).stroke_width(1),
    ))?;
    Ok(())
}

/// Each compared pair's similarity, both ways round.
fn pair_similarities(e: &ExerciseSimilarity) -> HashMap<(&str, &str), f64> {
    e.pairs
        .iter()
        .flat_map(|p| {
            [
                ((p.student_a.as_str(), p.student_b.as_str()), p.similarity),
                ((p.student_b.as_str(), p.student_a.as_str()), p.similarity),
            ]
        })
        .collect()
}

/// Row `r`'s student, numbered, left of the grid whose corner is `(gx, gy)`; the number again above
/// its column (every fifth where there are more than ten).
fn student_labels(
    root: &Area,
    student: &str,
    r: usize,
    n: i32,
    (gx, gy): (i32, i32),
) -> Result<(), SvgDrawError> {
    let label_style = TextStyle::from(("sans-serif", 10).into_font());
    let mut name = format!("{} {}", r + 1, student);
    if name.chars().count() > 20 {
        name = name.chars().take(19).collect::<String>() + "…";
    }
    let y = gy + r as i32 * CELL;
    root.draw(&Text::new(
        name,
        (gx - 4, y + CELL / 2),
        label_style.pos(Pos::new(HPos::Right, VPos::Center)),
    ))?;
    if r.is_multiple_of(5) || n <= 10 {
        root.draw(&Text::new(
            format!("{}", r + 1),
            (gx + r as i32 * CELL + CELL / 2, gy - 4),
            label_style.pos(Pos::new(HPos::Center, VPos::Bottom)),
        ))?;
    }
    Ok(())
}

/// The cell of students `i` and `j` at `(x, y)`: dark on the diagonal, grey where either has too
/// little own code, else white to red; boxed at or above the threshold.
fn cell(
    root: &Area,
    cfg: &SimilarityConfig,
    e: &ExerciseSimilarity,
    similarity: &HashMap<(&str, &str), f64>,
    (i, j): (usize, usize),
    (x, y): (i32, i32),
) -> Result<(), SvgDrawError> {
    let compared = e.own[i] >= cfg.min_own && e.own[j] >= cfg.min_own;
    let value = similarity
        .get(&(e.students[i].as_str(), e.students[j].as_str()))
        .copied()
        .unwrap_or(0.0);
    let colour = if i == j {
        RGBColor(90, 90, 90)
    } else if !compared {
        RGBColor(215, 215, 215)
    } else {
        let fade = (255.0 * (1.0 - value.clamp(0.0, 1.0))).round() as u8;
        RGBColor(255, fade, fade)
    };
    root.draw(&Rectangle::new(
        [(x, y), (x + CELL, y + CELL)],
        colour.filled(),
    ))?;
    if i != j && compared && value >= cfg.threshold - 1e-12 {
        root.draw(&Rectangle::new(
            [(x, y), (x + CELL - 1, y + CELL - 1)],
            BLACK.stroke_width(1),
        ))?;
    }
    Ok(())
}
