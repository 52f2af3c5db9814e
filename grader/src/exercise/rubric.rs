//! `[rubric]`: how many points each stage of `grade` is worth for one exercise. Every field has a
//! default, so a manifest without the table (every format 1 and 2 manifest) grades out of 100.

use serde::{Deserialize, Serialize};

/// The stages `grade` gives points for, in the order of the gradebook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GradeStage {
    /// Both nvcc builds (-G and -O3 -lineinfo).
    Builds,
    /// The exercise's own tool reports nothing.
    NamedTool,
    /// The other compute-sanitizer tools report nothing (a fix that adds a bug loses these).
    OtherTools,
    /// The public cases match the reference.
    Public,
    /// The instructor's hidden cases match the reference.
    Hidden,
    /// Timed against the reference (bug track) or the original (performance track).
    Speed,
}

impl GradeStage {
    pub const ALL: [GradeStage; 6] = [
        GradeStage::Builds,
        GradeStage::NamedTool,
        GradeStage::OtherTools,
        GradeStage::Public,
        GradeStage::Hidden,
        GradeStage::Speed,
    ];

    pub fn key(self) -> &'static str {
        match self {
            GradeStage::Builds => "builds",
            GradeStage::NamedTool => "named-tool",
            GradeStage::OtherTools => "other-tools",
            GradeStage::Public => "public",
            GradeStage::Hidden => "hidden",
            GradeStage::Speed => "speed",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            GradeStage::Builds => "builds",
            GradeStage::NamedTool => "the exercise's tool is clean",
            GradeStage::OtherTools => "the other tools are clean",
            GradeStage::Public => "public cases",
            GradeStage::Hidden => "hidden cases",
            GradeStage::Speed => "speed",
        }
    }
}

/// Points per stage (out of 100 by default: finding and fixing the bug is what the named tool's 40
/// reward; an untouched file that builds and runs right keeps 45). Partial credit: the other tools by the share that is clean, the cases by the
/// share that match, speed on a sliding scale (see `plans::grade`); builds and the named tool are
/// all or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Rubric {
    pub builds: f64,
    pub named_tool: f64,
    pub other_tools: f64,
    pub public: f64,
    pub hidden: f64,
    pub speed: f64,
}

impl Default for Rubric {
    fn default() -> Rubric {
        Rubric {
            builds: 10.0,
            named_tool: 40.0,
            other_tools: 10.0,
            public: 15.0,
            hidden: 10.0,
            speed: 15.0,
        }
    }
}

impl Rubric {
    pub fn get(&self, stage: GradeStage) -> f64 {
        match stage {
            GradeStage::Builds => self.builds,
            GradeStage::NamedTool => self.named_tool,
            GradeStage::OtherTools => self.other_tools,
            GradeStage::Public => self.public,
            GradeStage::Hidden => self.hidden,
            GradeStage::Speed => self.speed,
        }
    }

    /// The points each stage is worth for an exercise whose named tool's points go to `moved_to`
    /// (`LoadedManifest::grade_points` decides where); the total never changes.
    pub fn for_exercise(&self, moved_to: Option<GradeStage>) -> Vec<(GradeStage, f64)> {
        GradeStage::ALL
            .iter()
            .filter(|s| !(moved_to.is_some() && **s == GradeStage::NamedTool))
            .map(|&s| {
                (
                    s,
                    self.get(s)
                        + if Some(s) == moved_to {
                            self.named_tool
                        } else {
                            0.0
                        },
                )
            })
            .collect()
    }

    pub fn total(&self) -> f64 {
        GradeStage::ALL.iter().map(|s| self.get(*s)).sum()
    }
}

/// What is wrong with a `[rubric]`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RubricError {
    #[error("[rubric] {key}: points must be a number >= 0, got {got}")]
    NotPoints { key: String, got: f64 },
    #[error("[rubric] gives no points at all")]
    NoPoints,
}

/// Every value a finite number >= 0, and more than 0 in all: Err says what is wrong.
pub fn validate(r: &Rubric) -> Result<(), RubricError> {
    if let Some(s) = GradeStage::ALL
        .iter()
        .find(|s| !(r.get(**s).is_finite() && r.get(**s) >= 0.0))
    {
        return Err(RubricError::NotPoints {
            key: s.key().replace('-', "_"),
            got: r.get(*s),
        });
    }
    if r.total() <= 0.0 {
        return Err(RubricError::NoPoints);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exercise::manifest::parse;
    use std::path::Path;

    const RACE: &str = include_str!("../../../exercises/03-race/exercise.toml");
    const EARLY_RETURN: &str = include_str!("../../../exercises/13-early-return/exercise.toml");
    const REDUCTION: &str = include_str!("../../../exercises/57-reduction/exercise.toml");

    #[test]
    fn the_defaults_give_100_and_move_the_named_tools_points_where_nothing_is_named() {
        let r = Rubric::default();
        assert_eq!(r.total(), 100.0);
        let points =
            |id: &str, text: &str| parse(id, Path::new("x.toml"), text).unwrap().grade_points();
        let race = points("03-race", RACE);
        assert_eq!(race.len(), 6);
        let early = points("13-early-return", EARLY_RETURN);
        assert!(!early.iter().any(|(s, _)| *s == GradeStage::NamedTool));
        assert_eq!(
            early
                .iter()
                .find(|(s, _)| *s == GradeStage::Hidden)
                .unwrap()
                .1,
            r.hidden + r.named_tool
        );
        let reduction = points("57-reduction", REDUCTION);
        assert_eq!(
            reduction
                .iter()
                .find(|(s, _)| *s == GradeStage::Speed)
                .unwrap()
                .1,
            r.speed + r.named_tool
        );
        for p in [race, early, reduction] {
            assert_eq!(p.iter().map(|(_, v)| v).sum::<f64>(), 100.0);
        }
    }

    #[test]
    fn a_rubric_is_read_and_a_bad_one_names_its_line() {
        let text = format!("{RACE}\n[rubric]\nspeed = 30\nbuilds = 0\n");
        let m = parse(
            "03-race",
            Path::new("exercises/03-race/exercise.toml"),
            &text,
        )
        .unwrap();
        let r = m.manifest.rubric.unwrap();
        assert_eq!(
            (r.speed, r.builds, r.named_tool),
            (30.0, 0.0, 40.0),
            "unset fields keep their defaults"
        );
        let line = text.lines().position(|l| l == "[rubric]").unwrap() + 1;
        let e = parse(
            "03-race",
            Path::new("exercises/03-race/exercise.toml"),
            &format!("{RACE}\n[rubric]\nhidden = -5\n"),
        )
        .unwrap_err();
        assert_eq!(e.line, Some(line));
        assert!(
            e.message.contains("hidden") && e.message.contains(">= 0"),
            "{e}"
        );
        let e = parse(
            "03-race",
            Path::new("x.toml"),
            &format!("{RACE}\n[rubric]\nstyle = 5\n"),
        )
        .unwrap_err();
        assert!(e.message.contains("unknown field"), "{e}");
    }
}
