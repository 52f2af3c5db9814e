//! `cargo xtask`: the workbook's command line, a thin layer over the `grader` library.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use grader::exit::ExitStatus;

use anstream::eprintln;
use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand, ValueEnum};
use grader::engine::config::Config;
use grader::engine::context::{Context, ContextError};
use grader::exercise::workbook::{self, Exercise, Workbook};
use grader::tools::sandbox::Isolation;

mod book;
mod cli;
mod grade;
mod learn;
mod output;
mod sanitize;
mod toolkit;
mod verify;

use book::*;
use cli::*;
use grade::*;
use learn::*;
use output::{reporter, Reporter, Shown};
use sanitize::*;
use toolkit::*;
use verify::*;

mod catalog {
    include!(concat!(env!("OUT_DIR"), "/embed/catalog.rs"));
}

fn main() -> ExitCode {
    let matches = <Cli as clap::CommandFactory>::command()
        .bin_name(typed_name())
        .get_matches();
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match cli.color {
        ColorWhen::Auto => {}
        ColorWhen::Always => anstream::ColorChoice::Always.write_global(),
        ColorWhen::Never => anstream::ColorChoice::Never.write_global(),
    }
    // Every tool and program runs in a process group of its own, which the terminal's Ctrl-C does
    // not reach: take them down before leaving, so that no child outlives the command.
    let _ = ctrlc::set_handler(|| {
        grader::tools::runner::kill_all_running();
        eprintln!("\ninterrupted (Ctrl-C): every tool and program it started was stopped; nothing was graded");
        std::process::exit(ExitStatus::Interrupted.code().into());
    });
    let out = reporter(cli.format());
    let command = matches.subcommand_name().unwrap_or_default().to_string();
    // The exit status is decided here, once, for every command, and every reporter hears it.
    let status = match run(cli) {
        Ok(status) => status,
        Err(e) => {
            let status = exit_of(&e);
            eprintln!("error: {e:#}");
            out.error(&e, status);
            status
        }
    };
    out.finished(&command, status);
    status.into()
}

/// The exit status of the error that ended a command: a usage error unless it says otherwise.
fn exit_of(e: &anyhow::Error) -> ExitStatus {
    if e.downcast_ref::<ToolError>().is_some() {
        return ExitStatus::ToolError;
    }
    if let Some(w) = e.downcast_ref::<workbook::WorkbookError>() {
        return w.exit();
    }
    if let Some(r) = e.downcast_ref::<grader::learner::ResetError>() {
        return r.exit();
    }
    ExitStatus::Usage
}

fn open_workbook() -> Result<Workbook> {
    open_workbook_about(None)
}

/// The workbook, for a command about the exercise `about` (where it names one).
fn open_workbook_about(about: Option<&str>) -> Result<Workbook> {
    let cwd = std::env::current_dir()?;
    let root = workbook::find_root(&cwd)?;
    let wb = Workbook::new(root, catalog::EXERCISES, catalog::HARNESS)?.with_path(catalog::PATH);
    if let Some(problem) = &wb.path_problem {
        eprintln!("warning: the learning path goes by id until its file is fixed: {problem}");
    }
    // A broken exercise is said once, on stderr (the one the command names by its own error);
    // every other one works as usual.
    for b in wb.broken_besides(about) {
        eprintln!(
            "warning: exercise {} is left out until it is fixed: {}",
            b.id, b.error
        );
    }
    Ok(wb)
}

/// A plan's progress lines, to the command's reporter.
fn progress(out: &'static dyn Reporter) -> impl FnMut(&str) + Send + 'static {
    move |line: &str| out.progress(line)
}

/// The settings every plan runs with: the environment's, then the command line's.
struct PlanSettings {
    arch: Option<String>,
    isolation: Option<IsolationArg>,
    record_tools: Option<PathBuf>,
    replay_tools: Option<PathBuf>,
    /// `--verbose`: the sandbox and trust lines too.
    verbose: bool,
}

/// A failure to set up the engine: tool errors (no nvcc, a refused sandbox) exit 3, not 2.
#[derive(Debug)]
struct ToolError(ContextError);

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ToolError {}

fn context(wb: &Workbook, settings: &PlanSettings, out: &'static dyn Reporter) -> Result<Context> {
    let mut config = Config::from_env()?;
    config.arch = settings.arch.clone();
    if let Some(i) = settings.isolation {
        config.isolation = match i {
            IsolationArg::Auto => Isolation::Auto,
            IsolationArg::Strict => Isolation::Strict,
            IsolationArg::None => Isolation::None,
        };
    }
    config.record_tools = settings.record_tools.clone();
    config.replay_tools = settings.replay_tools.clone();
    let mut ctx = Context::new(wb, config, progress(out)).map_err(ToolError)?;
    ctx.events = Some(std::sync::Arc::new(move |e| out.engine_event(e)));
    Ok(ctx)
}

fn run(cli: Cli) -> Result<ExitStatus> {
    let format = cli.format();
    let out = reporter(format);
    if format == Format::Sarif && !matches!(cli.command, Command::Sanitize { .. }) {
        anyhow::bail!("--format sarif is for `sanitize`; use text or json here");
    }
    let settings = PlanSettings {
        arch: cli.arch,
        isolation: cli.isolation,
        record_tools: cli.record_tools,
        replay_tools: cli.replay_tools,
        verbose: cli.verbose,
    };
    match cli.command {
        Command::Check { id } => check(id, &settings, out),
        Command::List => list(out),
        Command::Hint { id } => hint(&id, out),
        Command::Reset { id } => reset(&id, out),
        Command::Watch { id, poll } => watch_from(id, poll, &settings, out),
        Command::Sanitize {
            files,
            bin,
            nvcc_flags,
            profile,
            args,
        } => sanitize(files, bin, nvcc_flags, profile, args, &settings, out),
        Command::Grade {
            action: Some(GradeAction::Merge { out: dir }),
            ..
        } => finish_gradebook(&dir, out),
        Command::Grade { action: None, args } => grade(args, &settings, out),
        Command::Verify {
            ids,
            record,
            keep,
            survey,
        } => verify(ids, record, keep, survey, &settings, out),
        Command::Peak { again } => {
            let wb = open_workbook()?;
            let ctx = context(&wb, &settings, out)?;
            if let Some(reason) = ctx.no_gpu_reason() {
                eprintln!("SKIPPED: the peak is measured on a GPU ({reason})");
                return Ok(grader::judge::verdict::Outcome::Skipped { reason }.exit());
            }
            let peak = grader::judge::perf::peak(&ctx, &wb, again)?;
            out.result(&Shown(&peak, || grader::report::peak_text(&peak)))?;
            Ok(ExitStatus::Pass)
        }
        Command::Book {
            serve,
            addr,
            out: to,
        } => {
            let wb = open_workbook()?;
            if serve {
                book(&wb, None, Some(&addr))?;
                return Ok(ExitStatus::Pass);
            }
            let dir = book(&wb, to.as_deref(), None)?.context("the book tool said nothing")?;
            out.result(&Shown(&serde_json::json!({ "book": dir }), || {
                format!("book built: {}\n", dir.join("index.html").display())
            }))?;
            Ok(ExitStatus::Pass)
        }
        Command::Toolkit {
            action: ToolkitAction::Install,
        } => toolkit_install(out),
        Command::Toolkit {
            action: ToolkitAction::Show,
        } => toolkit_show(out),
        Command::Bundle { out: to } => {
            let wb = open_workbook()?;
            let dir = if to.is_absolute() {
                to
            } else {
                wb.root.join(to)
            };
            bundle(&wb, &dir)?;
            out.result(&Shown(&serde_json::json!({ "bundle": dir }), || {
                format!(
                    "bundle ready: {} (run ./cudabugs check 03-race inside it)\n",
                    dir.display()
                )
            }))?;
            Ok(ExitStatus::Pass)
        }
    }
}
