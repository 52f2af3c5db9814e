//! What a submission may change: only the marked regions of the exercise's file, and nothing in
//! them that reaches beyond them at compile time. The harness and its header are always the
//! workbook's own (the grader embeds them); a workbook copy whose `harness/` differs is refused.

use serde::{Deserialize, Serialize};

use crate::exercise::workbook::{Exercise, Workbook};
use crate::exercise::{directives, regions};

/// Why a submission is not gradable, with the offending difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tampered {
    pub reason: String,
    /// A unified diff of the offending change (against the workbook's original).
    pub diff: String,
}

fn diff(original: &str, submitted: &str, path: &str) -> String {
    similar::TextDiff::from_lines(original, submitted)
        .unified_diff()
        .context_radius(2)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// Check one exercise's file against the workbook's original: the one gradability rule, which
/// `grade` applies before it builds anything and `check` applies to a learner's file.
pub fn check(ex: &Exercise, submitted: &str) -> Result<(), Tampered> {
    let path = format!("exercises/{}/{}", ex.id(), ex.manifest.source_name());
    let refuse = |reason: String| Tampered {
        reason,
        diff: diff(ex.original, submitted, &path),
    };
    match regions::differ_only_inside(ex.original, submitted) {
        Err(e) => {
            return Err(refuse(format!(
                "the marked regions are broken at line {}: {}",
                e.line, e.message
            )))
        }
        Ok(Some(d)) => {
            return Err(refuse(format!(
                "{} (only the code between `// ANCHOR:` and `// ANCHOR_END:` may change)",
                d.describe()
            )))
        }
        Ok(None) => {}
    }
    let marked = regions::parse(submitted).unwrap_or_default();
    match region_reach(ex, submitted, &marked) {
        Some(reason) => Err(refuse(reason)),
        None => Ok(()),
    }
}

/// What in the regions reaches past them at compile time, read as the compiler reads the file
/// (`exercise::directives`): a directive other than a local `#pragma` or an `#include` of a header
/// the exercise's manifest allows, in any spelling; or a region whose last line leaves a comment,
/// a raw string or a line splice open, which would swallow the code after it.
fn region_reach(ex: &Exercise, submitted: &str, marked: &[regions::Region]) -> Option<String> {
    let (found, open) = directives::read(submitted);
    let allowed = ex.manifest.manifest.region_headers();
    for d in &found {
        if !marked.iter().any(|r| r.contains(d.line)) || d.local_pragma() {
            continue;
        }
        let spelled = d
            .spelled
            .map(|s| format!(" (spelled with `{s}`)"))
            .unwrap_or_default();
        let shown = d.canonical();
        if let Some(header) = d.system_header() {
            if allowed.iter().any(|a| a == header) {
                continue;
            }
            let may = if allowed.is_empty() {
                "this exercise's regions may include no header".to_string()
            } else {
                format!(
                    "this exercise's regions may include only <{}>",
                    allowed.join(">, <")
                )
            };
            return Some(format!("line {}: `{shown}`{spelled} inside a marked region: {may} (its manifest's `headers`)", d.line));
        }
        return Some(format!("line {}: `{shown}`{spelled} inside a marked region reaches past it (an include, a macro over the harness code, a moved line number, a condition on how it is built); only code, a `#pragma unroll` and the headers the exercise allows may stand there", d.line));
    }
    for r in marked {
        let last = r.end_line.saturating_sub(1);
        if let Some((line, what)) = open.iter().find(|(l, _)| *l == last && r.contains(*l)) {
            let what = match what {
                directives::Open::BlockComment => "a `/*` comment",
                directives::Open::RawString => "a raw string",
                directives::Open::Splice => "a line splice (a backslash at its end)",
            };
            return Some(format!("line {line}, the last of region `{}`, leaves {what} open: it would run over the code after the region", r.name));
        }
    }
    None
}

/// A workbook copy's own `harness/` files, where they differ from the grader's: the whole
/// submission is refused, since its author may expect them to be used.
pub fn harness_changes(wb: &Workbook, student_root: &std::path::Path) -> Option<Tampered> {
    let dir = student_root.join("harness");
    if !dir.is_dir() {
        return None;
    }
    for (name, text) in wb.harness {
        let path = dir.join(name);
        let theirs = match crate::class::roster::read_submitted(student_root, &path) {
            Ok(text) => text,
            // There, but not a file the grader reads (a link): refused, and never followed.
            Err(e) if path.symlink_metadata().is_ok() => {
                return Some(Tampered {
                    reason: format!("harness/{name} cannot be read as a plain file ({e}): the harness is the grader's own and may not change"),
                    diff: String::new(),
                });
            }
            Err(_) => continue,
        };
        if theirs != *text {
            return Some(Tampered {
                reason: format!("harness/{name} differs from the workbook's: the harness is the grader's own and may not change"),
                diff: diff(text, &theirs, &format!("harness/{name}")),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_may_hold_no_directive_in_any_spelling() {
        let (_dir, wb) = crate::exercise::workbook::test_workbook(&["03-race"]);
        let ex = wb.resolve("03-race").unwrap();
        let refused = |region_line: &str| {
            let text = ex.original.replacen(
                "__device__ float warp_sum",
                &format!("{region_line}\n__device__ float warp_sum"),
                1,
            );
            check(ex, &text).err().map(|t| t.reason)
        };
        for spelling in [
            "%:include <cstdio>",
            "#\\\ndefine warp_sum cheat",
            "# /* x */ include <cstdio>",
            "_Pragma(\"push_macro(\\\"CB_CHECK\\\")\")",
            "#if __CUDACC_DEBUG__\n#endif",
        ] {
            let reason = refused(spelling).unwrap_or_else(|| panic!("`{spelling}` was gradable"));
            assert!(reason.contains("inside a marked region"), "{reason}");
        }
        assert_eq!(refused("#pragma unroll 4"), None);
        // 03's manifest allows cooperative groups, and nothing else.
        assert_eq!(refused("#include <cooperative_groups.h>"), None);
        assert!(refused("#include <mma.h>")
            .unwrap()
            .contains("may include only <cooperative_groups.h>"));
        assert!(refused("int x; /*").unwrap().contains("comment"));
    }

    #[test]
    fn an_inserted_line_outside_is_called_inserted() {
        let (_dir, wb) = crate::exercise::workbook::test_workbook(&["03-race"]);
        let ex = wb.resolve("03-race").unwrap();
        let text = ex.original.replacen(
            "#include <algorithm>",
            "#include <algorithm>\n#include <cstdio>",
            1,
        );
        let reason = check(ex, &text).unwrap_err().reason;
        assert!(
            reason.contains("inserted") && reason.contains("#include <cstdio>"),
            "{reason}"
        );
    }
}
