//! A lesson's layout picture: cells of memory (or threads, or banks) in rows, some marked, some
//! grouped, drawn as SVG from a small TOML block in the lesson (a fenced `cudabugs-layout` block),
//! so that the picture is data the book tool checks, not a pasted image.
//!
//! ```toml
//! caption = "3 blocks of 4 threads over 10 elements"
//! cols = 12                      # cells per row
//! rows = 1
//! label = "index"                # each cell's text: "index" (its flat index), "none", or a list
//! [[mark]]
//! cells = "10..12"               # flat indices: "a..b" (b excluded), "a", or "a..b,c,d..e"
//! as = "bad"                     # good, bad, halo, unused or key
//! means = "threads past the end of the array"
//! [[group]]
//! cells = "0..4"                 # a run of cells of the last row, bracketed below it
//! label = "block 0"
//! ```

use anyhow::{bail, Context as _, Result};
use serde::Deserialize;
use std::fmt::Write as _;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    caption: String,
    cols: usize,
    #[serde(default = "one")]
    rows: usize,
    /// Each cell's text; none: its flat index.
    label: Option<Label>,
    #[serde(default)]
    mark: Vec<Mark>,
    #[serde(default)]
    group: Vec<Group>,
}

fn one() -> usize {
    1
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Label {
    Word(String),
    Each(Vec<String>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Mark {
    cells: String,
    #[serde(rename = "as")]
    kind: Kind,
    means: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Group {
    cells: String,
    label: String,
}

/// What a marked cell is. Okabe and Ito's colours, which readers with any common colour-vision
/// deficiency tell apart; every kind is also named in the legend beside its colour.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Good,
    Bad,
    Halo,
    Unused,
    Key,
}

impl Kind {
    fn fill(self) -> &'static str {
        match self {
            Kind::Good => "#56B4E9",   // sky blue
            Kind::Bad => "#D55E00",    // vermillion
            Kind::Halo => "#F0E442",   // yellow
            Kind::Unused => "#DDDDDD", // light grey
            Kind::Key => "#009E73",    // bluish green
        }
    }
}

const CELL: usize = 34;
/// About how wide a character of the caption (15 px bold) and of the legend (13 px) is.
const CAPTION_PX: usize = 9;
const LEGEND_PX: usize = 7;

/// `text` in lines of at most `chars` characters, broken at spaces.
fn wrap(text: &str, chars: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= chars => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}
const MARGIN: usize = 12;
/// The widest picture a lesson column holds at 1280 px without scrolling.
const MAX_WIDTH: usize = 760;

/// "10..12,14" -> [10, 11, 14], each below `count`.
fn cells(spec: &str, count: usize) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim) {
        let (a, b) = match part.split_once("..") {
            Some((a, b)) => (a.trim().parse::<usize>()?, b.trim().parse::<usize>()?),
            None => {
                let a = part.parse::<usize>()?;
                (a, a + 1)
            }
        };
        if a >= b || b > count {
            bail!("cells `{part}`: not a run inside the {count} cells");
        }
        out.extend(a..b);
    }
    Ok(out)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The picture for one fenced block, as inline SVG.
pub fn svg(source: &str) -> Result<String> {
    let spec: Spec = toml::from_str(source).context("a cudabugs-layout block")?;
    let count = spec.cols * spec.rows;
    if count == 0 {
        bail!("a layout needs at least one cell");
    }
    let grid_width = 2 * MARGIN + spec.cols * CELL;
    if grid_width > MAX_WIDTH {
        bail!(
            "{} columns are {grid_width} px wide: at most {MAX_WIDTH} fit a lesson",
            spec.cols
        );
    }
    let width = picture_width(&spec, grid_width);
    let caption = wrap(&spec.caption, (width - 2 * MARGIN) / CAPTION_PX);
    let legends: Vec<Vec<String>> = spec
        .mark
        .iter()
        .map(|m| wrap(&m.means, (width - 2 * MARGIN - 24) / LEGEND_PX))
        .collect();
    let kind = cell_kinds(&spec.mark, count)?;
    let texts = cell_texts(spec.label.as_ref(), count)?;
    let top = MARGIN + 6 + caption.len() * 18;
    let grid_bottom = top + spec.rows * CELL;
    let groups_h = if spec.group.is_empty() { 0 } else { 28 };
    let legend_top = grid_bottom + groups_h + 14;
    let legend_lines: usize = legends.iter().map(|l| l.len().max(1)).sum();
    let height = legend_top + legend_lines * 17 + spec.mark.len() * 5 + MARGIN;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{}" font-family="sans-serif">"#,
        escape(&spec.caption)
    );
    draw_caption(&mut out, &caption);
    draw_cells(&mut out, spec.cols, top, &kind, &texts);
    draw_groups(&mut out, &spec, grid_bottom)?;
    draw_legend(&mut out, &spec.mark, &legends, legend_top);
    out.push_str("</svg>\n");
    Ok(out)
}

/// Wide enough for the grid and, up to the lesson's width, for the texts; longer texts wrap.
fn picture_width(spec: &Spec, grid_width: usize) -> usize {
    let longest = |chars: usize, px: usize, indent: usize| 2 * MARGIN + indent + chars * px;
    [
        grid_width,
        longest(spec.caption.chars().count(), CAPTION_PX, 0),
        spec.mark
            .iter()
            .map(|m| longest(m.means.chars().count(), LEGEND_PX, 24))
            .max()
            .unwrap_or(0),
    ]
    .into_iter()
    .max()
    .unwrap_or(grid_width)
    .min(MAX_WIDTH)
}

/// Each cell's kind, from the marks (a later mark wins); none: an unmarked cell.
fn cell_kinds(marks: &[Mark], count: usize) -> Result<Vec<Option<Kind>>> {
    let mut kind = vec![None; count];
    for m in marks {
        for c in cells(&m.cells, count)? {
            kind[c] = Some(m.kind);
        }
    }
    Ok(kind)
}

/// Each cell's text, as the spec's `label` says.
fn cell_texts(label: Option<&Label>, count: usize) -> Result<Vec<String>> {
    Ok(match label {
        None => (0..count).map(|i| i.to_string()).collect(),
        Some(Label::Word(w)) if w == "index" => (0..count).map(|i| i.to_string()).collect(),
        Some(Label::Word(w)) if w == "none" => vec![String::new(); count],
        Some(Label::Word(w)) => bail!("label `{w}`: index, none, or a list of the cells' texts"),
        Some(Label::Each(list)) if list.len() == count => list.clone(),
        Some(Label::Each(list)) => bail!("{} labels for {count} cells", list.len()),
    })
}

fn draw_caption(out: &mut String, caption: &[String]) {
    for (i, line) in caption.iter().enumerate() {
        let _ = writeln!(
            out,
            r#"<text x="{MARGIN}" y="{}" font-size="15" font-weight="bold">{}</text>"#,
            MARGIN + 12 + i * 18,
            escape(line)
        );
    }
}

/// The grid, row by row from `top`: each cell in its kind's colour, with its text.
fn draw_cells(out: &mut String, cols: usize, top: usize, kind: &[Option<Kind>], texts: &[String]) {
    for (i, text) in texts.iter().enumerate() {
        let (r, c) = (i / cols, i % cols);
        let (x, y) = (MARGIN + c * CELL, top + r * CELL);
        let fill = kind[i].map_or("#FFFFFF", Kind::fill);
        let _ = writeln!(
            out,
            r##"<rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" fill="{fill}" stroke="#333333"/>"##
        );
        if !text.is_empty() {
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}" font-size="12" text-anchor="middle">{}</text>"#,
                x + CELL / 2,
                y + CELL / 2 + 4,
                escape(text)
            );
        }
    }
}

/// Each group's bracket and label below the grid; an error for a group that is not one run of the
/// last row.
fn draw_groups(out: &mut String, spec: &Spec, grid_bottom: usize) -> Result<()> {
    let count = spec.cols * spec.rows;
    for g in &spec.group {
        let run = cells(&g.cells, count)?;
        let (first, last) = (run[0], *run.last().unwrap_or(&run[0]));
        let last_row = spec.rows - 1;
        if first / spec.cols != last_row
            || last / spec.cols != last_row
            || run.len() != last - first + 1
        {
            bail!(
                "group `{}`: a group is one run of cells of the last row (its bracket goes below it)",
                g.label
            );
        }
        let (x0, x1) = (
            MARGIN + (first % spec.cols) * CELL + 3,
            MARGIN + (last % spec.cols + 1) * CELL - 3,
        );
        let y = grid_bottom + 6;
        let _ = writeln!(
            out,
            r##"<path d="M{x0} {y} v6 H{x1} v-6" fill="none" stroke="#333333" stroke-width="1.5"/>"##
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" font-size="12" text-anchor="middle">{}</text>"#,
            (x0 + x1) / 2,
            y + 20,
            escape(&g.label)
        );
    }
    Ok(())
}

/// Each mark's colour key and its meaning (`legends`: wrapped), one under another from `top`.
fn draw_legend(out: &mut String, marks: &[Mark], legends: &[Vec<String>], top: usize) {
    let mut y = top;
    for (m, lines) in marks.iter().zip(legends) {
        let _ = writeln!(
            out,
            r##"<rect x="{MARGIN}" y="{y}" width="16" height="16" fill="{}" stroke="#333333"/>"##,
            m.kind.fill()
        );
        for line in lines {
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}" font-size="13">{}</text>"#,
                MARGIN + 24,
                y + 13,
                escape(line)
            );
            y += 17;
        }
        y += 5;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: &str = r#"
caption = "3 blocks of 4 threads over 10 elements"
cols = 12
[[mark]]
cells = "0..10"
as = "good"
means = "an element of the array"
[[mark]]
cells = "10..12"
as = "bad"
means = "a thread past the end"
[[group]]
cells = "8..12"
label = "block 2"
"#;

    #[test]
    fn a_layout_draws_every_cell_its_marks_groups_and_legend() {
        let svg = svg(BOUNDS).unwrap();
        assert_eq!(
            svg.matches("<rect").count(),
            12 + 2,
            "12 cells, 2 legend keys"
        );
        assert_eq!(svg.matches("#D55E00").count(), 3, "2 cells and their key");
        assert!(svg.contains(">block 2</text>") && svg.contains(">a thread past the end</text>"));
        assert!(svg.contains(">11</text>"), "the cells' indices");
    }

    #[test]
    fn a_wrong_layout_says_what_is_wrong() {
        let err = |s: &str| format!("{:#}", svg(s).unwrap_err());
        assert!(
            err(&BOUNDS.replace("10..12\"", "10..13\"")).contains("not a run inside the 12 cells")
        );
        assert!(err(&BOUNDS.replace("cols = 12", "cols = 40")).contains("at most 760 fit"));
        // A caption longer than the lesson is wide wraps instead of running off the picture.
        let long = svg(&BOUNDS.replace("3 blocks of 4", &"very long words ".repeat(12))).unwrap();
        assert!(long.contains(r#"width="760""#));
        assert!(long.matches(r#"font-weight="bold""#).count() >= 2);
        assert!(err(&BOUNDS.replace("as = \"bad\"", "as = \"awful\""))
            .contains("a cudabugs-layout block"));
        assert!(
            err(&BOUNDS.replace("8..12", "6..7,9")).contains("one run of cells of the last row")
        );
    }
}
