//! `cargo xtask`: the workbook's command line, a thin layer over the `grader` library.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use grader::exit::ExitStatus;

use anstream::{eprintln, print, println};
use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand, ValueEnum};
use grader::exercise::workbook::{self, Exercise, Workbook};
use grader::judge::config::Config;
use grader::judge::context::{Context, ContextError};
use grader::tools::sandbox::Isolation;

mod book;
mod cli;
mod grade;
mod learn;

use book::*;
use cli::*;
use grade::*;
use learn::*;

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
    let format = cli.format;
    match run(cli) {
        Ok(status) => status.into(),
        Err(e) => {
            let status = match (
                e.downcast_ref::<ToolError>(),
                e.downcast_ref::<workbook::WorkbookError>(),
            ) {
                (Some(_), _) => ExitStatus::ToolError,
                (_, Some(w)) => w.exit(),
                _ => ExitStatus::Usage,
            };
            eprintln!("error: {e:#}");
            if format == Format::Json {
                println!(
                    "{}",
                    serde_json::json!({ "error": format!("{e:#}"), "exit_code": status.code() })
                );
            }
            status.into()
        }
    }
}

fn open_workbook() -> Result<Workbook> {
    open_workbook_about(None)
}

/// The workbook, for a command about the exercise `about` (where it names one).
fn open_workbook_about(about: Option<&str>) -> Result<Workbook> {
    let cwd = std::env::current_dir()?;
    let root = workbook::find_root(&cwd)?;
    let wb = Workbook::new(root, catalog::EXERCISES, catalog::HARNESS)?;
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

fn progress(format: Format) -> impl FnMut(&str) + Send {
    move |line: &str| {
        if format == Format::Text {
            eprintln!("  .. {line}");
        }
    }
}

/// The settings every plan runs with: the environment's, then the command line's.
struct Settings {
    arch: Option<String>,
    isolation: Option<IsolationArg>,
    record_tools: Option<PathBuf>,
    replay_tools: Option<PathBuf>,
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

fn context(wb: &Workbook, settings: &Settings, format: Format) -> Result<Context> {
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
    Context::new(wb, config, progress(format)).map_err(|e| ToolError(e).into())
}

fn print_json(value: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

fn run(cli: Cli) -> Result<ExitStatus> {
    let format = cli.format;
    if format == Format::Sarif && !matches!(cli.command, Command::Sanitize { .. }) {
        anyhow::bail!("--format sarif is for `sanitize`; use text or json here");
    }
    let settings = Settings {
        arch: cli.arch,
        isolation: cli.isolation,
        record_tools: cli.record_tools,
        replay_tools: cli.replay_tools,
    };
    match cli.command {
        Command::Check { id } => {
            let wb = open_workbook_about(id.as_deref())?;
            let ex = match &id {
                Some(id) => wb.resolve(id)?,
                None => match next_pending(&wb) {
                    Some(next) => {
                        if format == Format::Text {
                            eprintln!("checking {}, the next pending exercise", next.id());
                        }
                        next
                    }
                    None => {
                        if format == Format::Text {
                            println!("Every exercise is done: `cargo xtask list` shows them, `cargo xtask check <id>` checks one again.");
                        }
                        return Ok(ExitStatus::Pass);
                    }
                },
            };
            let ctx = context(&wb, &settings, format)?;
            let report = check_and_record(&ctx, &wb, ex, format);
            show_check(&report, &wb, ex, format, false)?;
            if format == Format::Text && report.outcome.exit() == ExitStatus::Pass {
                say_next(&wb);
            }
            Ok(report.outcome.exit())
        }
        Command::List => {
            let wb = open_workbook()?;
            let state = load_state(&wb);
            let entries = grader::learner::list(&wb, &state.state);
            match format {
                Format::Json | Format::Sarif => print_json(&entries)?,
                Format::Text => print!("{}", grader::report::list_text(&entries)),
            }
            Ok(ExitStatus::Pass)
        }
        Command::Hint { id } => {
            let wb = open_workbook_about(Some(&id))?;
            let ex = wb.resolve(&id)?;
            let mut state = load_state(&wb);
            let hints = grader::learner::reveal_hint(ex, &mut state.state);
            save_state(&state);
            match format {
                Format::Json | Format::Sarif => print_json(&hints)?,
                Format::Text => print!("{}", grader::report::hints_text(&hints)),
            }
            Ok(ExitStatus::Pass)
        }
        Command::Reset { id } => {
            let wb = open_workbook_about(Some(&id))?;
            let ex = wb.resolve(&id)?;
            let reset = grader::learner::reset(&wb, ex).with_context(|| {
                format!(
                    "resetting {} (nothing was changed)",
                    wb.display_path(&wb.learner_path(ex))
                )
            })?;
            let mut was_done = false;
            if reset.restored {
                let mut state = load_state(&wb);
                was_done = state.state.mark_pending(ex.id());
                if was_done {
                    save_state(&state);
                }
            }
            match format {
                Format::Json | Format::Sarif => print_json(&reset)?,
                Format::Text => {
                    print!("{}", grader::report::reset_text(&reset));
                    if was_done {
                        println!("{} is pending again.", ex.id());
                    }
                }
            }
            Ok(ExitStatus::Pass)
        }
        Command::Watch { id, poll } => {
            let wb = open_workbook_about(id.as_deref())?;
            let mut current = match &id {
                Some(id) => wb.resolve(id)?,
                None => match next_pending(&wb) {
                    Some(next) => next,
                    None => {
                        if format == Format::Text {
                            println!("Every exercise is done: `cargo xtask list` shows them, `cargo xtask watch <id>` watches one again.");
                        }
                        return Ok(ExitStatus::Pass);
                    }
                },
            };
            let ctx = context(&wb, &settings, format)?;
            watch(&ctx, &wb, &mut current, poll, format)
        }
        Command::Sanitize {
            files,
            bin,
            nvcc_flags,
            profile,
            args,
        } => {
            if files.is_empty() && bin.is_none() {
                anyhow::bail!("give the program's .cu files (`cargo xtask sanitize prog.cu -- ARGS`) or a built binary (--bin PATH)");
            }
            let cwd = std::env::current_dir()?;
            let absolute = |p: &Path| -> Result<PathBuf> {
                cwd.join(p)
                    .canonicalize()
                    .with_context(|| format!("{}", p.display()))
            };
            let files: Vec<PathBuf> = files.iter().map(|f| absolute(f)).collect::<Result<_>>()?;
            let bin = bin.map(|b| absolute(&b)).transpose()?;
            // Inside a workbook its folders are used; anywhere else, the current folder's.
            let root = workbook::find_root(&cwd).unwrap_or_else(|_| cwd.clone());
            let wb = Workbook::new(root, catalog::EXERCISES, catalog::HARNESS)?;
            let ctx = context(&wb, &settings, format)?;
            let same = |a: &Path, b: &Path| b.canonicalize().map(|b| b == a).unwrap_or(false);
            let exercise = match files.as_slice() {
                [one] => wb.exercises.iter().find_map(|ex| {
                    [
                        ("learner", wb.learner_path(ex)),
                        ("reference", wb.solution_path(ex)),
                    ]
                    .into_iter()
                    .find(|(_, p)| same(one, p))
                    .map(|(v, p)| (ex, v, p))
                }),
                _ => None,
            };
            let gpu_stages = ctx.gpu_stages();
            let cases = match (&exercise, gpu_stages) {
                (Some((ex, _, _)), true) => {
                    grader::exercise::cases::prepare(ex, &grader::exercise::cases::dir(&wb, ex))?
                }
                _ => Default::default(),
            };
            let sub = match exercise {
                Some((ex, variant, path)) => {
                    let text = std::fs::read_to_string(&path)
                        .with_context(|| path.display().to_string())?;
                    grader::judge::plan::Submission::new(
                        &wb, "sanitize", ex, variant, path, text, &cases,
                    )
                }
                None => grader::judge::plan::Submission::program(
                    &wb,
                    "sanitize",
                    grader::judge::plan::Program {
                        sources: files,
                        nvcc_flags,
                        args: args.into_iter().map(Into::into).collect(),
                        prebuilt: bin,
                        cwd: cwd.clone(),
                        profile,
                    },
                ),
            };
            let report = grader::judge::sanitize::sanitize(&ctx, &wb, sub, progress(format));
            match format {
                Format::Json => print_json(&report)?,
                Format::Sarif => print_json(&grader::report::sarif::sarif(&report, &cwd))?,
                Format::Text => print!("{}", grader::report::sanitize_text(&report, &cwd)),
            }
            Ok(report.outcome.exit())
        }
        Command::Grade {
            action: Some(GradeAction::Merge { out }),
            ..
        } => finish_gradebook(&out, format),
        Command::Grade { action: None, args } => grade(args, &settings, format),
        Command::Verify {
            ids,
            record,
            keep,
            survey,
        } => {
            let wb = open_workbook()?;
            let selected: Vec<_> = if ids.is_empty() {
                wb.exercises.iter().collect()
            } else {
                ids.iter()
                    .map(|id| wb.resolve(id))
                    .collect::<Result<_, _>>()?
            };
            let ctx = context(&wb, &settings, format)?;
            let opts = grader::judge::verify::VerifyOptions { keep, survey };
            let result =
                grader::judge::verify::verify(&ctx, &wb, &selected, &opts, progress(format));
            if let Some(path) = &record {
                std::fs::write(path, serde_json::to_string_pretty(&result)? + "\n")
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            // A broken exercise fails the self-check of the whole workbook (it was named above).
            if ids.is_empty() && !wb.broken.is_empty() && result.outcome.rank() > 0 {
                if format == Format::Text {
                    print!("{}", grader::report::verify_text(&result));
                    eprintln!(
                        "FAIL: {} exercise(s) not gradable: {}",
                        wb.broken.len(),
                        wb.broken
                            .iter()
                            .map(|b| b.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                } else {
                    print_json(&result)?;
                }
                return Ok(ExitStatus::Fail);
            }
            match format {
                Format::Json | Format::Sarif => print_json(&result)?,
                Format::Text => print!("{}", grader::report::verify_text(&result)),
            }
            Ok(result.outcome.exit())
        }
        Command::Peak { again } => {
            let wb = open_workbook()?;
            let ctx = context(&wb, &settings, format)?;
            if let Some(reason) = ctx.no_gpu_reason() {
                eprintln!("SKIPPED: the peak is measured on a GPU ({reason})");
                return Ok(grader::judge::verdict::Outcome::Skipped { reason }.exit());
            }
            let peak = grader::judge::perf::peak(&ctx, &wb, again)?;
            match format {
                Format::Json | Format::Sarif => print_json(&peak)?,
                Format::Text => print!("{}", grader::report::peak_text(&peak)),
            }
            Ok(ExitStatus::Pass)
        }
        Command::Book { serve, addr, out } => {
            let wb = open_workbook()?;
            if serve {
                book(&wb, None, Some(&addr))?;
                return Ok(ExitStatus::Pass);
            }
            let dir = book(&wb, out.as_deref(), None)?.context("the book tool said nothing")?;
            match format {
                Format::Json | Format::Sarif => print_json(&serde_json::json!({ "book": dir }))?,
                Format::Text => println!("book built: {}", dir.join("index.html").display()),
            }
            Ok(ExitStatus::Pass)
        }
        Command::Toolkit {
            action: ToolkitAction::Install,
        } => {
            let wb = open_workbook()?;
            eprintln!(
                "installing {} into {}",
                grader::tools::toolchain::PINNED_WHEELS.join(" "),
                grader::tools::toolchain::LOCAL_TOOLKIT
            );
            let started = std::time::Instant::now();
            let nvcc = grader::tools::toolchain::install(&wb.root, |mb| {
                eprintln!(
                    "  .. {mb} MB of about {} MB unpacked",
                    grader::tools::toolchain::INSTALLED_MB
                )
            })?;
            eprintln!("installed in {:.0} s", started.elapsed().as_secs_f64());
            match format {
                Format::Json | Format::Sarif => print_json(&serde_json::json!({ "nvcc": nvcc }))?,
                Format::Text => println!("nvcc ready: {}", wb.display_path(&nvcc)),
            }
            Ok(ExitStatus::Pass)
        }
        Command::Toolkit {
            action: ToolkitAction::Show,
        } => {
            let wb = open_workbook()?;
            let tools = grader::tools::toolchain::Toolchain::discover(&wb.root);
            let show = |p: Option<&Path>| p.map(|p| p.display().to_string());
            let gpu = match grader::tools::gpu::probe() {
                grader::tools::gpu::GpuStatus::Present(g) => {
                    format!("{} ({}, CUDA {})", g.name, g.arch(), g.driver_cuda_version)
                }
                grader::tools::gpu::GpuStatus::NoDriver => "none (no NVIDIA driver)".into(),
                grader::tools::gpu::GpuStatus::Unusable(e) => format!("unusable: {e}"),
            };
            let found = [
                ("nvcc", show(tools.nvcc.as_ref().map(|n| n.path.as_path()))),
                ("compute_sanitizer", show(tools.sanitizer.as_deref())),
                ("ncu", show(tools.ncu.as_deref())),
                ("gpu", Some(gpu)),
                (
                    "isolation",
                    Some({
                        let (level, why) = grader::tools::launcher::Sandboxed::probe();
                        format!(
                            "{}{}",
                            level.describe(),
                            why.map(|w| format!(" (namespaces refused: {w})"))
                                .unwrap_or_default()
                        )
                    }),
                ),
            ];
            match format {
                Format::Json | Format::Sarif => print_json(
                    &found
                        .iter()
                        .cloned()
                        .collect::<std::collections::BTreeMap<_, _>>(),
                )?,
                Format::Text => {
                    for (name, value) in found {
                        println!(
                            "{:<18} {}",
                            format!("{}:", name.replace('_', "-")),
                            value.unwrap_or_else(|| "not found".into())
                        );
                    }
                }
            }
            Ok(ExitStatus::Pass)
        }
        Command::Bundle { out } => {
            let wb = open_workbook()?;
            let out = if out.is_absolute() {
                out
            } else {
                wb.root.join(out)
            };
            bundle(&wb, &out)?;
            match format {
                Format::Json | Format::Sarif => print_json(&serde_json::json!({ "bundle": out }))?,
                Format::Text => println!(
                    "bundle ready: {} (run ./cudabugs check 03-race inside it)",
                    out.display()
                ),
            }
            Ok(ExitStatus::Pass)
        }
    }
}
