//! Marked regions in a `.cu` file: `// ANCHOR: name` ... `// ANCHOR_END: name`, which are mdBook's
//! anchors, so that the book includes exactly the lines the grader reasons about.
//! The bug lives inside a region, the tool's finding must point into one, and an exercise and its
//! solution may differ only inside regions.

const BEGIN: &str = "ANCHOR:";
const END: &str = "ANCHOR_END:";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    pub name: String,
    /// 1-based line of the begin marker.
    pub begin_line: usize,
    /// 1-based line of the end marker.
    pub end_line: usize,
}

impl Region {
    /// Whether a source line lies between the markers (the markers themselves count).
    pub fn contains(&self, line: usize) -> bool {
        (self.begin_line..=self.end_line).contains(&line)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionError {
    pub line: usize,
    pub message: String,
}

enum Marker<'a> {
    Begin(&'a str),
    End(&'a str),
}

/// The region marker on a line (line `n`), if it holds one.
fn marker(line: &str, n: usize) -> Option<Result<Marker<'_>, RegionError>> {
    let comment = line.trim_start().strip_prefix("//")?.trim();
    let (rest, is_begin) = if let Some(rest) = comment.strip_prefix(BEGIN) {
        (rest, true)
    } else if let Some(rest) = comment.strip_prefix(END) {
        (rest, false)
    } else {
        return None;
    };
    // mdBook's anchor names: word characters, `-` and `_`.
    let name = rest.trim();
    if name.is_empty() {
        return Some(Err(RegionError {
            line: n,
            message: "marker needs a region name".into(),
        }));
    }
    if !name
        .chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
    {
        return Some(Err(RegionError {
            line: n,
            message: format!("region name `{name}` may only hold letters, digits, `-` and `_`"),
        }));
    }
    Some(Ok(if is_begin {
        Marker::Begin(name)
    } else {
        Marker::End(name)
    }))
}

/// All regions of a source, in order. Regions may not nest or repeat a name.
pub fn parse(source: &str) -> Result<Vec<Region>, RegionError> {
    let mut regions: Vec<Region> = Vec::new();
    let mut open: Option<(String, usize)> = None;
    for (i, line) in source.lines().enumerate() {
        let n = i + 1;
        match marker(line, n) {
            None => {}
            Some(Err(e)) => return Err(e),
            Some(Ok(Marker::Begin(name))) => {
                if let Some((outer, _)) = &open {
                    return Err(RegionError {
                        line: n,
                        message: format!("region `{name}` begins inside `{outer}`"),
                    });
                }
                if regions.iter().any(|r| r.name == name) {
                    return Err(RegionError {
                        line: n,
                        message: format!("region `{name}` is marked twice"),
                    });
                }
                open = Some((name.to_string(), n));
            }
            Some(Ok(Marker::End(name))) => match open.take() {
                Some((open_name, begin)) if open_name == name => regions.push(Region {
                    name: open_name,
                    begin_line: begin,
                    end_line: n,
                }),
                Some((open_name, _)) => {
                    return Err(RegionError {
                        line: n,
                        message: format!("`ANCHOR_END: {name}` closes region `{open_name}`"),
                    })
                }
                None => {
                    return Err(RegionError {
                        line: n,
                        message: format!("`ANCHOR_END: {name}` without an `ANCHOR: {name}`"),
                    })
                }
            },
        }
    }
    if let Some((name, begin)) = open {
        return Err(RegionError {
            line: begin,
            message: format!("region `{name}` is never closed"),
        });
    }
    Ok(regions)
}

/// A source cut into the text outside regions and the regions themselves.
#[derive(Debug, PartialEq, Eq)]
enum Segment<'a> {
    Outside(Vec<&'a str>),
    Inside(&'a str),
}

fn segments(source: &str) -> Result<Vec<Segment<'_>>, RegionError> {
    let mut out = Vec::new();
    let mut outside = Vec::new();
    let mut inside = false;
    for (i, line) in source.lines().enumerate() {
        match marker(line, i + 1) {
            Some(Err(e)) => return Err(e),
            Some(Ok(Marker::Begin(name))) => {
                out.push(Segment::Outside(std::mem::take(&mut outside)));
                out.push(Segment::Inside(name));
                inside = true;
            }
            Some(Ok(Marker::End(_))) => inside = false,
            None if !inside => outside.push(line.trim_end()),
            None => {}
        }
    }
    out.push(Segment::Outside(outside));
    Ok(out)
}

/// The first place where two sources differ outside their marked regions (line number in `a`).
#[derive(Debug, PartialEq, Eq)]
pub struct OutsideDifference {
    pub line_in_a: usize,
    pub a: String,
    pub b: String,
    /// Whether `b` has a line that `a` lacks, lacks one of `a`'s, or changed one.
    pub change: Change,
}

/// How a line outside the regions differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Changed,
    /// `b` has the line `b` where `a` has none: the rest of the section is `a`'s, one line down.
    Inserted,
    /// `b` lacks `a`'s line `a`.
    Removed,
}

impl OutsideDifference {
    /// The difference in words, for a learner: "line 8 ... : `x` was inserted".
    pub fn describe(&self) -> String {
        let (line, a, b) = (self.line_in_a, self.a.trim(), self.b.trim());
        match self.change {
            Change::Inserted => format!("a line was inserted outside the marked regions, before line {line} of the original: `{b}`"),
            Change::Removed => format!("line {line} is outside the marked regions and was removed: `{a}`"),
            Change::Changed => format!("line {line} is outside the marked regions and differs from the workbook's: `{a}` became `{b}`"),
        }
    }
}

/// How `b` differs from `a` at their first differing line `k`.
fn change_at(a: &[&str], b: &[&str], k: usize) -> Change {
    if k < b.len() && a.get(k..) == b.get(k + 1..) {
        Change::Inserted
    } else if k < a.len() && a.get(k + 1..) == b.get(k..) {
        Change::Removed
    } else {
        Change::Changed
    }
}

/// Checks that `a` and `b` have the same regions in the same order and are identical outside them
/// (trailing white space ignored).
pub fn differ_only_inside(a: &str, b: &str) -> Result<Option<OutsideDifference>, RegionError> {
    let (sa, sb) = (segments(a)?, segments(b)?);
    let outside_lines_a = outside_line_numbers(a);
    let mut seen_outside = 0usize;
    for (x, y) in sa.iter().zip(sb.iter()) {
        match (x, y) {
            (Segment::Outside(lx), Segment::Outside(ly)) => {
                if let Some(k) = (0..lx.len().max(ly.len())).find(|&k| lx.get(k) != ly.get(k)) {
                    let line = outside_lines_a
                        .get(seen_outside + k.min(lx.len().saturating_sub(1)))
                        .copied();
                    return Ok(Some(OutsideDifference {
                        line_in_a: line.unwrap_or(1),
                        a: lx.get(k).copied().unwrap_or("(end of section)").to_string(),
                        b: ly.get(k).copied().unwrap_or("(end of section)").to_string(),
                        change: change_at(lx, ly, k),
                    }));
                }
                seen_outside += lx.len();
            }
            (Segment::Inside(na), Segment::Inside(nb)) if na == nb => {}
            _ => {
                return Ok(Some(OutsideDifference {
                    line_in_a: outside_lines_a.get(seen_outside).copied().unwrap_or(1),
                    a: "(region markers differ)".into(),
                    b: "(region markers differ)".into(),
                    change: Change::Changed,
                }))
            }
        }
    }
    if sa.len() != sb.len() {
        return Ok(Some(OutsideDifference {
            line_in_a: a.lines().count(),
            a: "(region markers differ)".into(),
            b: "(region markers differ)".into(),
            change: Change::Changed,
        }));
    }
    Ok(None)
}

fn outside_line_numbers(source: &str) -> Vec<usize> {
    let mut inside = false;
    let mut numbers = Vec::new();
    for (i, line) in source.lines().enumerate() {
        match marker(line, i + 1) {
            Some(Ok(Marker::Begin(_))) => inside = true,
            Some(Ok(Marker::End(_))) => inside = false,
            _ if !inside => numbers.push(i + 1),
            _ => {}
        }
    }
    numbers
}

/// The lines of each region of `source` by name, the markers included.
fn region_bodies(source: &str) -> Result<Vec<(String, Vec<&str>)>, RegionError> {
    let regions = parse(source)?;
    let lines: Vec<&str> = source.lines().collect();
    Ok(regions
        .into_iter()
        .map(|r| (r.name, lines[r.begin_line - 1..r.end_line].to_vec()))
        .collect())
}

/// `base` with each of its regions replaced by the region of the same name in `replacements` (a file
/// of regions alone; lines outside them are comments for people and ignored). Every region of `base`
/// must have its replacement, and every replacement a region to go to.
pub fn splice(base: &str, replacements: &str) -> Result<String, RegionError> {
    let bodies = region_bodies(replacements)?;
    let regions = parse(base)?;
    for (name, _) in &bodies {
        if !regions.iter().any(|r| &r.name == name) {
            let line = parse(replacements)?
                .iter()
                .find(|r| &r.name == name)
                .map(|r| r.begin_line)
                .unwrap_or(1);
            return Err(RegionError {
                line,
                message: format!("region `{name}` has no region of that name to replace"),
            });
        }
    }
    let lines: Vec<&str> = base.lines().collect();
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut next = 0;
    for r in &regions {
        let Some((_, body)) = bodies.iter().find(|(n, _)| n == &r.name) else {
            return Err(RegionError {
                line: r.begin_line,
                message: format!("region `{}` has no replacement", r.name),
            });
        };
        out.extend_from_slice(&lines[next..r.begin_line - 1]);
        out.extend_from_slice(body);
        next = r.end_line;
    }
    out.extend_from_slice(&lines[next..]);
    let mut text = out.join("\n");
    if base.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "int a;\n// ANCHOR: bug\nx = 1;\n// ANCHOR_END: bug\nint b;\n";

    #[test]
    fn parses_regions_with_lines() {
        let r = parse(A).unwrap();
        assert_eq!(
            r,
            vec![Region {
                name: "bug".into(),
                begin_line: 2,
                end_line: 4
            }]
        );
        assert!(r[0].contains(3) && !r[0].contains(5));
    }

    #[test]
    fn rejects_unclosed_nested_and_repeated() {
        assert_eq!(parse("// ANCHOR: a\n").unwrap_err().line, 1);
        let nested = "// ANCHOR: a\n// ANCHOR: b\n";
        assert!(parse(nested).unwrap_err().message.contains("inside"));
        let twice = "// ANCHOR: a\n// ANCHOR_END: a\n// ANCHOR: a\n// ANCHOR_END: a\n";
        assert_eq!(parse(twice).unwrap_err().line, 3);
        assert!(parse("// ANCHOR_END: a\n")
            .unwrap_err()
            .message
            .contains("without"));
        assert!(parse("// ANCHOR: a(\n")
            .unwrap_err()
            .message
            .contains("may only hold"));
    }

    #[test]
    fn differences_inside_regions_are_allowed() {
        let b = A.replace("x = 1;", "x = 2;\ny = 3;");
        assert_eq!(differ_only_inside(A, &b).unwrap(), None);
    }

    #[test]
    fn differences_outside_regions_are_reported_with_line() {
        let b = A.replace("int b;", "int c;");
        let d = differ_only_inside(A, &b).unwrap().unwrap();
        assert_eq!(
            (d.line_in_a, d.a.as_str(), d.b.as_str()),
            (5, "int b;", "int c;")
        );
        let extra = format!("{A}int extra;\n");
        assert!(differ_only_inside(A, &extra).unwrap().is_some());
        let renamed = A.replace(": bug", ": other");
        assert!(differ_only_inside(A, &renamed).unwrap().is_some());
    }

    #[test]
    fn splice_puts_each_region_back_by_name_and_keeps_the_rest() {
        let solution = "head\n// ANCHOR: a\nfixed a\n// ANCHOR_END: a\nmiddle\n// ANCHOR: b\nfixed b\n// ANCHOR_END: b\ntail\n";
        let regions = "// the original regions\n// ANCHOR: b\nbug b\nmore b\n// ANCHOR_END: b\n// ANCHOR: a\nbug a\n// ANCHOR_END: a\n";
        let original = splice(solution, regions).unwrap();
        assert_eq!(original, "head\n// ANCHOR: a\nbug a\n// ANCHOR_END: a\nmiddle\n// ANCHOR: b\nbug b\nmore b\n// ANCHOR_END: b\ntail\n");
        assert_eq!(differ_only_inside(&original, solution).unwrap(), None);
        assert!(splice(solution, "// ANCHOR: a\nx\n// ANCHOR_END: a\n")
            .unwrap_err()
            .message
            .contains("`b` has no replacement"));
        assert!(splice(solution, "// ANCHOR: c\nx\n// ANCHOR_END: c\n")
            .unwrap_err()
            .message
            .contains("`c` has no region"));
    }
}
