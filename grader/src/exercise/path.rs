//! The learning path (`exercises/path.toml`): the chapters in the order a learner takes them, each
//! with what it teaches and its exercises from the easiest to the hardest. `list`, the "Next:" after
//! a pass, `watch` and the book's map all read it from here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::exercise::manifest::line_of;

/// Where the path lives, relative to the workbook root.
pub use crate::exercise::files::PATH_FILE;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PathFile {
    #[serde(rename = "chapter")]
    chapters: Vec<ChapterSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChapterSpec {
    title: String,
    why: String,
    exercises: Vec<Spanned<String>>,
}

/// One chapter of the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chapter {
    pub title: String,
    /// What the chapter teaches, in a sentence: said when a learner reaches it.
    pub why: String,
    /// Its exercises, easiest first.
    pub exercises: Vec<String>,
}

/// The whole path. Every exercise of the workbook is in exactly one chapter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LearningPath {
    pub chapters: Vec<Chapter>,
}

/// Where a malformed path file is wrong.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct PathError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

/// What an exercise brings to the path: its id and its level (1-3, where the manifest gives one).
#[derive(Debug, Clone, Copy)]
pub struct Stop<'a> {
    pub id: &'a str,
    pub level: Option<u8>,
}

/// Parse and check `text` against the workbook's exercises: every id known and listed once,
/// every exercise listed, and levels that never go down inside a chapter (the path goes from easy
/// to hard).
pub fn parse(path: &Path, text: &str, exercises: &[Stop]) -> Result<LearningPath, PathError> {
    let error = |line: Option<usize>, message: String| PathError {
        path: path.to_path_buf(),
        line,
        message,
    };
    let file: PathFile = toml::from_str(text).map_err(|e| {
        error(
            e.span().map(|s| line_of(text, s.start)),
            e.message().to_string(),
        )
    })?;
    let levels: BTreeMap<&str, Option<u8>> = exercises.iter().map(|s| (s.id, s.level)).collect();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut chapters = Vec::new();
    for spec in file.chapters {
        let mut ids = Vec::new();
        let mut last_level = 0;
        for id in &spec.exercises {
            let line = line_of(text, id.span().start);
            let name = id.get_ref();
            let Some(level) = levels.get(name.as_str()) else {
                return Err(error(Some(line), format!("no exercise is called {name}")));
            };
            if let Some(first) = seen.insert(name.clone(), line) {
                return Err(error(
                    Some(line),
                    format!("{name} is already on the path at line {first}"),
                ));
            }
            let level = level.unwrap_or(1);
            if level < last_level {
                return Err(error(
                    Some(line),
                    format!(
                        "{name} is level {level} but follows a level {last_level} exercise in \"{}\": a chapter goes from easy to hard",
                        spec.title
                    ),
                ));
            }
            last_level = level;
            ids.push(name.clone());
        }
        chapters.push(Chapter {
            title: spec.title,
            why: spec.why,
            exercises: ids,
        });
    }
    let missing: Vec<&str> = exercises
        .iter()
        .map(|s| s.id)
        .filter(|id| !seen.contains_key(*id))
        .collect();
    if !missing.is_empty() {
        return Err(error(
            None,
            format!(
                "not on the path: {} (add each to the chapter it belongs in)",
                missing.join(", ")
            ),
        ));
    }
    Ok(LearningPath { chapters })
}

impl LearningPath {
    /// The path a workbook without a valid path file falls back on: one chapter per track, in id
    /// order.
    pub fn by_id<'a>(ids: impl IntoIterator<Item = &'a str>) -> LearningPath {
        let (bugs, perf): (Vec<String>, Vec<String>) = ids
            .into_iter()
            .map(str::to_string)
            .partition(|id| id.as_str() < "51");
        let chapter = |title: &str, exercises| Chapter {
            title: title.into(),
            why: String::new(),
            exercises,
        };
        LearningPath {
            chapters: [chapter("Bugs", bugs), chapter("Performance", perf)]
                .into_iter()
                .filter(|c| !c.exercises.is_empty())
                .collect(),
        }
    }

    /// Every exercise id in path order.
    pub fn order(&self) -> impl Iterator<Item = &str> {
        self.chapters
            .iter()
            .flat_map(|c| c.exercises.iter().map(String::as_str))
    }

    /// Why `next` comes after `done`, in a sentence for the learner: its place in the chapter both
    /// are in, or the purpose of the chapter it opens (None where `next` is not on the path).
    pub fn why_next(&self, done: &str, next: &str) -> Option<String> {
        let (chapter, place) = self.place(next)?;
        let of = chapter.exercises.len();
        let same_chapter = self
            .place(done)
            .is_some_and(|(c, _)| c.title == chapter.title);
        Some(if same_chapter {
            format!(
                "it is {} of {of} in \"{}\", which goes from the easiest to the hardest.",
                place + 1,
                chapter.title
            )
        } else if place == 0 {
            format!(
                "it opens the chapter \"{}\": {}",
                chapter.title, chapter.why
            )
        } else {
            format!(
                "it is {} of {of} in the chapter \"{}\": {}",
                place + 1,
                chapter.title,
                chapter.why
            )
        })
    }

    /// The chapter an exercise is in, and its place there (0-based).
    pub fn place(&self, id: &str) -> Option<(&Chapter, usize)> {
        self.chapters
            .iter()
            .find_map(|c| c.exercises.iter().position(|e| e == id).map(|i| (c, i)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"
[[chapter]]
title = "Memory errors"
why = "Indexes."
exercises = ["01-index", "05-memset"]

[[chapter]]
title = "Races"
why = "Barriers."
exercises = ["03-race"]
"#;

    fn stops() -> Vec<Stop<'static>> {
        vec![
            Stop {
                id: "01-index",
                level: Some(1),
            },
            Stop {
                id: "03-race",
                level: Some(2),
            },
            Stop {
                id: "05-memset",
                level: Some(1),
            },
        ]
    }

    fn parsed(text: &str) -> Result<LearningPath, PathError> {
        parse(Path::new(PATH_FILE), text, &stops())
    }

    #[test]
    fn the_path_orders_chapters_and_places_each_exercise() {
        let path = parsed(TEXT).unwrap();
        assert_eq!(
            path.order().collect::<Vec<_>>(),
            ["01-index", "05-memset", "03-race"]
        );
        let (chapter, i) = path.place("05-memset").unwrap();
        assert_eq!((chapter.title.as_str(), i), ("Memory errors", 1));
        assert!(path.place("99-none").is_none());
    }

    #[test]
    fn a_broken_path_names_the_line_and_the_reason() {
        let unknown = TEXT.replace("\"03-race\"", "\"03-rcae\"");
        let e = parsed(&unknown).unwrap_err();
        assert_eq!(e.line, Some(10), "{e}");
        assert!(e.message.contains("03-rcae"), "{e}");

        let twice = TEXT.replace("[\"03-race\"]", "[\"03-race\", \"01-index\"]");
        let e = parsed(&twice).unwrap_err();
        assert!(e.message.contains("already on the path at line 5"), "{e}");

        let missing = TEXT.replace("\"01-index\", ", "");
        let e = parsed(&missing).unwrap_err();
        assert!(e.message.contains("not on the path: 01-index"), "{e}");

        let harder_first = TEXT.replace("[\"03-race\"]", "[]").replace(
            "\"01-index\", \"05-memset\"",
            "\"03-race\", \"01-index\", \"05-memset\"",
        );
        let e = parsed(&harder_first).unwrap_err();
        assert!(e.message.contains("easy to hard"), "{e}");

        let typo = TEXT.replace("why = \"Barriers.\"", "whyy = \"Barriers.\"");
        let e = parsed(&typo).unwrap_err();
        assert!(
            e.message.contains("unknown field") && e.line == Some(9),
            "{e}"
        );
    }

    #[test]
    fn the_next_exercise_says_why_it_comes_next() {
        let path = parsed(TEXT).unwrap();
        assert_eq!(
            path.why_next("01-index", "05-memset").as_deref(),
            Some("it is 2 of 2 in \"Memory errors\", which goes from the easiest to the hardest.")
        );
        assert_eq!(
            path.why_next("05-memset", "03-race").as_deref(),
            Some("it opens the chapter \"Races\": Barriers.")
        );
        // A learner who skipped ahead is told where in the new chapter the next one sits.
        assert_eq!(
            path.why_next("03-race", "05-memset").as_deref(),
            Some("it is 2 of 2 in the chapter \"Memory errors\": Indexes.")
        );
        assert_eq!(path.why_next("01-index", "99-none"), None);
    }

    #[test]
    fn without_a_path_each_track_is_a_chapter_in_id_order() {
        let path = LearningPath::by_id(["01-index", "51-coalesce", "03-race"]);
        assert_eq!(
            path.chapters
                .iter()
                .map(|c| (c.title.as_str(), c.exercises.len()))
                .collect::<Vec<_>>(),
            [("Bugs", 2), ("Performance", 1)]
        );
    }
}
