//! Typed results: each step's status, the findings it produced, and the overall outcome with its
//! distinct exit code.

use serde::{Deserialize, Serialize};

use crate::manifest::{FindingKind, Tool};
use crate::regions::Region;
use crate::sanitizer::{Record, SourceLocation};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Passed,
    Failed,
    TimedOut,
    ToolError,
    Skipped,
}

/// One step of a check or a verification.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    pub name: String,
    pub status: Status,
    /// One line for the table.
    pub summary: String,
    /// More, where there is more to say (compiler errors, the program's output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub wall_ms: u64,
}

impl Step {
    pub fn new(name: impl Into<String>, status: Status, summary: impl Into<String>) -> Step {
        Step { name: name.into(), status, summary: summary.into(), detail: None, command: None, wall_ms: 0 }
    }
    pub fn detail(mut self, d: impl Into<String>) -> Step {
        let d = d.into();
        self.detail = (!d.trim().is_empty()).then_some(d);
        self
    }
    pub fn command(mut self, c: impl Into<String>) -> Step {
        self.command = Some(c.into());
        self
    }
    pub fn wall(mut self, d: std::time::Duration) -> Step {
        self.wall_ms = d.as_millis() as u64;
        self
    }
}

/// The verdict. Exit codes: pass 0, fail 1, (2 is a usage error), tool error 3, timeout 4,
/// not gradable 5, skipped for want of a GPU 6.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    Pass,
    Fail { step: String },
    ToolError { step: String, message: String },
    Timeout { step: String },
    NotGradable { reason: String },
    Skipped { reason: String },
}

impl Outcome {
    pub fn exit_code(&self) -> i32 {
        match self {
            Outcome::Pass => 0,
            Outcome::Fail { .. } => 1,
            Outcome::ToolError { .. } => 3,
            Outcome::Timeout { .. } => 4,
            Outcome::NotGradable { .. } => 5,
            Outcome::Skipped { .. } => 6,
        }
    }

    /// The first step that did not pass decides.
    pub fn from_steps(steps: &[Step]) -> Outcome {
        match steps.iter().find(|s| s.status != Status::Passed) {
            None => Outcome::Pass,
            Some(s) => match s.status {
                Status::Failed => Outcome::Fail { step: s.name.clone() },
                Status::TimedOut => Outcome::Timeout { step: s.name.clone() },
                Status::ToolError => Outcome::ToolError { step: s.name.clone(), message: s.summary.clone() },
                Status::Skipped => Outcome::Skipped { reason: s.summary.clone() },
                Status::Passed => unreachable!(),
            },
        }
    }

    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail { .. } => "fail",
            Outcome::ToolError { .. } => "tool error",
            Outcome::Timeout { .. } => "timeout",
            Outcome::NotGradable { .. } => "not gradable",
            Outcome::Skipped { .. } => "skipped",
        }
    }
}

/// Records of one shape (same kind, text and source line) folded together.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Finding {
    pub tool: Tool,
    pub kind: FindingKind,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// How many records had this shape.
    pub records: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hazards: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<[u32; 3]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<[u32; 3]>,
    /// Locations in the exercise's own source (all locations if none is there).
    pub locations: Vec<SourceLocation>,
    /// The marked region the finding points into, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

/// Fold records into findings, keeping only locations in `source` where there are any.
pub fn findings(records: &[Record], source: &std::path::Path, regions: &[Region]) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for r in records {
        let mine: Vec<SourceLocation> = r.locations_in(source).cloned().collect();
        let locations = if mine.is_empty() { r.locations.clone() } else { mine.clone() };
        let region = mine.iter().find_map(|l| regions.iter().find(|g| g.contains(l.line as usize))).map(|g| g.name.clone());
        let key_line = locations.first().map(|l| l.line);
        if let Some(f) = out.iter_mut().find(|f| f.kind == r.kind && f.text == r.text && f.locations.first().map(|l| l.line) == key_line) {
            f.records += 1;
            continue;
        }
        out.push(Finding {
            tool: r.tool,
            kind: r.kind,
            text: r.text.clone(),
            level: r.level.clone(),
            records: 1,
            hazards: r.count,
            thread: r.thread,
            block: r.block,
            locations,
            region,
        });
    }
    out
}
