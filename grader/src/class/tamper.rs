//! What a submission may change: only the marked regions of the exercise's file, and nothing in
//! them that reaches beyond them at compile time. The harness and its header are always the
//! workbook's own (the grader embeds them); a workbook copy whose `harness/` differs is refused.

use serde::{Deserialize, Serialize};

use crate::exercise::regions;
use crate::exercise::workbook::{Exercise, Workbook};

/// Why a submission is not gradable, with the offending difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tampered {
    pub reason: String,
    /// A unified diff of the offending change (against the workbook's original).
    pub diff: String,
}

/// Preprocessor directives that act outside the line they are on: an `#include` of a file of the
/// student's own, a `#define` that rewrites the harness code after the region, a `#line` that
/// moves the tools' findings. `#pragma unroll` and the like stay allowed.
const REACHING_DIRECTIVES: &[&str] = &[
    "include", "import", "define", "undef", "line", "if", "ifdef", "ifndef", "elif", "else",
    "endif", "error",
];

fn directive(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?;
    let word: &str = rest
        .trim_start()
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .next()?;
    REACHING_DIRECTIVES.contains(&word).then_some(word)
}

fn diff(original: &str, submitted: &str, path: &str) -> String {
    similar::TextDiff::from_lines(original, submitted)
        .unified_diff()
        .context_radius(2)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// Check one exercise's file against the workbook's original.
pub fn check(ex: &Exercise, submitted: &str) -> Result<(), Tampered> {
    let path = format!("exercises/{}/{}", ex.id(), ex.manifest.source_name());
    match regions::differ_only_inside(ex.original, submitted) {
        Err(e) => {
            return Err(Tampered {
                reason: format!(
                    "the marked regions are broken at line {}: {}",
                    e.line, e.message
                ),
                diff: diff(ex.original, submitted, &path),
            });
        }
        Ok(Some(d)) => {
            let reason = format!(
                "line {} is outside the marked regions and differs from the workbook's: `{}` became `{}` (only the code between `// ANCHOR:` and `// ANCHOR_END:` may change)",
                d.line_in_a,
                d.a.trim(),
                d.b.trim()
            );
            return Err(Tampered {
                reason,
                diff: diff(ex.original, submitted, &path),
            });
        }
        Ok(None) => {}
    }
    let marked = regions::parse(submitted).unwrap_or_default();
    for (i, line) in submitted.lines().enumerate() {
        if let Some(word) = directive(line).filter(|_| marked.iter().any(|r| r.contains(i + 1))) {
            return Err(Tampered {
                reason: format!("line {}: `#{word}` inside a marked region reaches past it (an include, a macro over the harness code, a moved line number); only code may change", i + 1),
                diff: diff(ex.original, submitted, &path),
            });
        }
    }
    Ok(())
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
    fn directives_that_reach_outside_are_named_and_pragmas_are_not() {
        assert_eq!(
            directive("  #define cudaMemcpy(a,b,c,d) cheat(a,b,c,d)"),
            Some("define")
        );
        assert_eq!(directive("# include \"../x.h\""), Some("include"));
        assert_eq!(directive("#pragma unroll 4"), None);
        assert_eq!(directive("x = a # b;"), None);
    }
}
