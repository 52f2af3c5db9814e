//! Where a command's words go: one reporter per `--format` (hyperfine's Exporter, nextest's
//! reporter), so that a command says what happened and never asks which format is on.
//!
//! - `Text`: progress and notes on stderr, the result and what to do next on stdout, for people.
//! - `Json`: the result as one JSON document on stdout, and nothing else there (`watch`: one line
//!   per check); errors as `{"error", "exit_code"}`.
//! - `Sarif`: `sanitize`'s findings as SARIF 2.1.0; refused by every other command before it runs.
//! - `Events`: JSON Lines on stdout, one event per line and the same envelope for every command
//!   (`schema`, `event`; book/src/events.schema.json): `progress`, `note`, `say`, `result` (the
//!   JSON document `Json` prints), `error`, `grade`'s own events, the engine's (`phase_started`,
//!   `stage_done`, in every plan), and last `finished` with the exit code, which `main` decides and
//!   hands every reporter (`Reporter::finished`).

use anstream::{eprintln, print, println};
use anyhow::Result;
use grader::exit::ExitStatus;

use grader::engine::events::EngineEvent;
use grader::plans::grade::Event;

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
    /// A progress bar for a long batch (`grade`), where a person watches a terminal.
    fn progress_bar(&self) -> Option<indicatif::ProgressBar> {
        None
    }
    /// One event of a class's grading (the bar moved where there is one).
    fn grade_event(&self, _e: &Event, _bar: Option<&indicatif::ProgressBar>) {}
    /// What the engine tells of any plan: a phase's start, a stage's end.
    fn engine_event(&self, _e: &EngineEvent) {}
    /// The command ended with `status` (every command, once, last).
    fn finished(&self, _command: &str, _status: ExitStatus) {}
}

struct Text;
struct Json;
struct Sarif;
struct Events;

/// The reporter of `--format`.
pub(crate) fn reporter(format: Format) -> &'static dyn Reporter {
    match format {
        Format::Text => &Text,
        Format::Json => &Json,
        Format::Sarif => &Sarif,
        Format::Events => &Events,
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
    fn progress_bar(&self) -> Option<indicatif::ProgressBar> {
        std::io::IsTerminal::is_terminal(&std::io::stderr()).then(|| {
            let bar = indicatif::ProgressBar::new(0);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} pairs, ETA {eta} {msg}",
                )
                .expect("a valid template"),
            );
            bar
        })
    }
    /// The bar moved (at a terminal) or a line on stderr.
    fn grade_event(&self, e: &Event, bar: Option<&indicatif::ProgressBar>) {
        let line = match (bar, e) {
            (Some(bar), Event::Started { pairs, already_graded, .. }) => {
                bar.set_length(*pairs as u64);
                bar.set_position(*already_graded as u64);
                bar.reset_eta();
                return;
            }
            (Some(bar), Event::Graded { student, exercise, done, .. }) => {
                bar.set_position(*done as u64);
                bar.set_message(format!("{student} / {exercise}"));
                return;
            }
            (Some(bar), Event::Note { message }) => return bar.println(message),
            (None, Event::Started { layout, students, exercises, pairs, already_graded, workers }) => format!(
                "{} students ({}), {exercises} exercises: {pairs} pairs, {already_graded} already in the journal; workers: {}",
                students,
                layout.describe(),
                workers.join(", ")
            ),
            (None, Event::Graded { student, exercise, state, points, max, flags, done, of, .. }) => {
                let flags = if flags.is_empty() { String::new() } else { format!(" flags: {}", flags.iter().map(|f| f.key()).collect::<Vec<_>>().join(", ")) };
                format!("[{done}/{of}] {student} / {exercise}: {points} / {max} ({state}){flags}")
            }
            (None, Event::Note { message }) => message.clone(),
            (_, Event::Chunk { exercise, pairs, phases, .. }) => {
                let line = format!("{exercise}: {pairs} pair(s): tools and cases {:.1} s, timing {:.1} s, fresh inputs {:.1} s", phases.tools, phases.timing, phases.fresh);
                match bar {
                    Some(bar) => return bar.println(line),
                    None => line,
                }
            }
        };
        self.progress(&line);
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
    /// A JSON line per event.
    fn grade_event(&self, e: &Event, _bar: Option<&indicatif::ProgressBar>) {
        println!("{}", serde_json::to_string(e).unwrap_or_default());
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

/// The version of the events' schema (book/src/events.schema.json): a field may be added without
/// a new version; a change of meaning takes one.
pub(crate) const EVENTS_SCHEMA: u32 = 1;

impl Events {
    /// One event on its own line: `fields` (an object) with the envelope first.
    fn emit(&self, event: &str, fields: serde_json::Value) {
        let mut line = serde_json::Map::new();
        line.insert("schema".into(), EVENTS_SCHEMA.into());
        line.insert("event".into(), event.into());
        if let serde_json::Value::Object(rest) = fields {
            line.extend(rest.into_iter().filter(|(k, _)| k != "event"));
        }
        println!("{}", serde_json::Value::Object(line));
    }

    /// A serialised event under the name its `event` field holds.
    fn emit_named(&self, value: serde_json::Value) {
        let name = value["event"].as_str().unwrap_or("event").to_string();
        self.emit(&name, value);
    }
}

impl Reporter for Events {
    fn progress(&self, line: &str) {
        self.emit("progress", serde_json::json!({ "message": line }));
    }
    fn say(&self, line: &str) {
        self.emit("say", serde_json::json!({ "message": line }));
    }
    fn note(&self, line: &str) {
        self.emit("note", serde_json::json!({ "message": line }));
    }
    fn result(&self, r: &dyn Rendered) -> Result<()> {
        self.emit("result", serde_json::json!({ "result": r.json()? }));
        Ok(())
    }
    /// `grade`'s events, each under its own name (`started`, `graded`, `chunk`, `note`).
    fn grade_event(&self, e: &Event, _bar: Option<&indicatif::ProgressBar>) {
        self.emit_named(serde_json::to_value(e).unwrap_or_default());
    }
    /// The engine's, likewise (`phase_started`, `stage_done`).
    fn engine_event(&self, e: &EngineEvent) {
        self.emit_named(serde_json::to_value(e).unwrap_or_default());
    }
    fn error(&self, e: &anyhow::Error, status: ExitStatus) {
        self.emit(
            "error",
            serde_json::json!({ "message": format!("{e:#}"), "exit_code": status.code() }),
        );
    }
    fn finished(&self, command: &str, status: ExitStatus) {
        self.emit(
            "finished",
            serde_json::json!({ "command": command, "exit_code": status.code() }),
        );
    }
}
