//! A chapter's source checked before it is rendered: every include names a file (and anchor) that
//! exists, and every relative link or image a file of the book.

use std::path::Path;

use mdbook_preprocessor::book::Chapter;

use crate::normalise;

/// Every `{{#include PATH[:ANCHOR]}}` of a chapter's source names a file that exists and, for an
/// anchor, one that the file marks. (mdBook itself only logs a missing file, and includes nothing
/// for a missing anchor.)
pub(crate) fn check_includes(raw: &str, chapter_file: &Path) -> Vec<String> {
    let dir = chapter_file.parent().unwrap_or(Path::new("."));
    let mut errors = Vec::new();
    for (n, line) in raw.lines().enumerate() {
        let mut rest = line;
        while let Some(start) = rest.find("{{#include ") {
            let after = &rest[start + "{{#include ".len()..];
            let Some(end) = after.find("}}") else { break };
            let target = after[..end].trim();
            let (file, anchor) = match target.split_once(':') {
                Some((f, a)) => (f, Some(a)),
                None => (target, None),
            };
            let path = dir.join(file);
            match std::fs::read_to_string(&path) {
                Err(e) => errors.push(format!("line {}: include {file}: {e}", n + 1)),
                Ok(text) => {
                    if let Some(anchor) =
                        anchor.filter(|a| !a.chars().next().is_some_and(|c| c.is_ascii_digit()))
                    {
                        let marks = |tag: &str| {
                            text.lines().any(|l| {
                                l.split_once(tag)
                                    .is_some_and(|(_, name)| name.trim() == anchor)
                            })
                        };
                        if !marks("ANCHOR:") || !marks("ANCHOR_END:") {
                            errors.push(format!("line {}: include {file}:{anchor}: the file has no anchor `{anchor}`", n + 1));
                        }
                    }
                }
            }
            rest = &after[end..];
        }
    }
    errors
}

/// Relative links and images must point at files of the book.
pub(crate) fn dead_links(chapter: &Chapter, src: &Path) -> Vec<String> {
    use pulldown_cmark::{Event, Parser, Tag};
    let Some(path) = &chapter.path else {
        return Vec::new();
    };
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut errors = Vec::new();
    for (event, range) in Parser::new(&chapter.content).into_offset_iter() {
        let dest = match event {
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => dest_url,
            _ => continue,
        };
        if dest.contains("://") || dest.starts_with('#') || dest.starts_with("mailto:") {
            continue;
        }
        let file = dest.split('#').next().unwrap_or("");
        let target = normalise(&dir.join(file));
        if !src.join(&target).is_file() {
            let line = chapter.content[..range.start].matches('\n').count() + 1;
            errors.push(format!(
                "line {line}: dead link `{dest}` ({} does not exist)",
                target.display()
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_of_missing_files_and_anchors_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("k.cu"),
            "// ANCHOR: bug\nx;\n// ANCHOR_END: bug\n",
        )
        .unwrap();
        let chapter = dir.path().join("c.md");
        let errors = check_includes("{{#include k.cu:bug}}\n{{#include k.cu:nope}}\n{{#include gone.cu}}\n{{#include k.cu:2:3}}\n", &chapter);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("line 2:") && errors[0].contains("no anchor `nope`"));
        assert!(errors[1].starts_with("line 3:") && errors[1].contains("gone.cu"));
    }

    #[test]
    fn relative_links_must_reach_a_file_of_the_book() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tools")).unwrap();
        std::fs::write(dir.path().join("tools/memcheck.md"), "# m").unwrap();
        let mut ch = Chapter::new("L", "[ok](../tools/memcheck.md#what) [web](https://x.org) [top](#a)\n\n[bad](../tools/racecheck.md)\n".into(), "lessons/01.md", Vec::new());
        ch.source_path = Some("lessons/01.md".into());
        let errors = dead_links(&ch, dir.path());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("line 3: dead link `../tools/racecheck.md`"),
            "{errors:?}"
        );
    }
}
