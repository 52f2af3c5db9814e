//! Where a command's words go: one reporter per `--format` (hyperfine's Exporter, nextest's
//! reporter), so that a command says what happened and never asks which format is on.
//!
//! - `Text`: progress and notes on stderr, the result and what to do next on stdout, for people.
//! - `Json`: the result as one JSON document on stdout, and nothing else there (`watch`: one line
//!   per check); errors as `{"error", "exit_code"}`.
//! - `Sarif`: `sanitize`'s findings as SARIF 2.1.0; refused by every other command before it runs.

use anstream::{eprintln, print, println};
use anyhow::Result;
use grader::exit::ExitStatus;

use crate::cli::Format;

/// A command's result, as each reporter renders it.
pub(crate) trait Rendered {
    /// For machines: the JSON document.
    fn json(&self) -> Result<serde_json::Value>;
    /// For people.
    fn text(&self) -> String;
    /// SARIF, for the commands that find things in source files (`sanitize`).
    fn sarif(&self) -> Option<serde_json::Value> {
        None
    }
}

/// A serialisable value and its text.
pub(crate) struct Shown<'a, T: serde::Serialize, F: Fn() -> String>(pub &'a T, pub F);

impl<T: serde::Serialize, F: Fn() -> String> Rendered for Shown<'_, T, F> {
    fn json(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(self.0)?)
    }
    fn text(&self) -> String {
        (self.1)()
    }
}

pub(crate) trait Reporter: Sync {
    /// A plan's progress while it runs.
    fn progress(&self, _line: &str) {}
    /// A line for people beside the result (what comes next, how to go on), on stdout.
    fn say(&self, _line: &str) {}
    /// A line for people that is not the result (which exercise is checked, a fallback), on stderr.
    fn note(&self, _line: &str) {}
    /// The command's result.
    fn result(&self, r: &dyn Rendered) -> Result<()>;
    /// One of a stream of results (`watch`: a check per save).
    fn streamed(&self, r: &dyn Rendered) -> Result<()> {
        self.result(r)
    }
    /// The error that ended the command (already said on stderr).
    fn error(&self, _e: &anyhow::Error, _status: ExitStatus) {}
    /// Whether progress bars and prompts make sense (a person reads the output).
    fn for_people(&self) -> bool {
        false
    }
}

struct Text;
struct Json;
struct Sarif;

/// The reporter of `--format`.
pub(crate) fn reporter(format: Format) -> &'static dyn Reporter {
    match format {
        Format::Text => &Text,
        Format::Json => &Json,
        Format::Sarif => &Sarif,
    }
}

impl Reporter for Text {
    fn progress(&self, line: &str) {
        eprintln!("  .. {line}");
    }
    fn say(&self, line: &str) {
        println!("{line}");
    }
    fn note(&self, line: &str) {
        eprintln!("{line}");
    }
    fn result(&self, r: &dyn Rendered) -> Result<()> {
        print!("{}", r.text());
        Ok(())
    }
    fn for_people(&self) -> bool {
        true
    }
}

impl Reporter for Json {
    fn result(&self, r: &dyn Rendered) -> Result<()> {
        println!("{}", serde_json::to_string_pretty(&r.json()?)?);
        Ok(())
    }
    fn streamed(&self, r: &dyn Rendered) -> Result<()> {
        println!("{}", serde_json::to_string(&r.json()?)?);
        Ok(())
    }
    fn error(&self, e: &anyhow::Error, status: ExitStatus) {
        println!(
            "{}",
            serde_json::json!({ "error": format!("{e:#}"), "exit_code": status.code() })
        );
    }
}

impl Reporter for Sarif {
    fn result(&self, r: &dyn Rendered) -> Result<()> {
        // Commands without SARIF are refused before they run (`run`); this one fell back to JSON.
        let value = match r.sarif() {
            Some(sarif) => sarif,
            None => r.json()?,
        };
        println!("{}", serde_json::to_string_pretty(&value)?);
        Ok(())
    }
}
