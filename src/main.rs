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

mod catalog {
    include!(concat!(env!("OUT_DIR"), "/embed/catalog.rs"));
}

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    about = "cudabugs: find and fix silent CUDA bugs with the real tools",
    version
)]
struct Cli {
    /// Output format: text for people, json (stable fields) for scripts and editors.
    #[arg(long, global = true, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Colours: auto follows the terminal, NO_COLOR and CLICOLOR_FORCE.
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto)]
    color: ColorWhen,
    /// nvcc -arch to build for (default: the GPU's compute capability, else sm_90).
    #[arg(long, global = true)]
    arch: Option<String>,
    /// How learner code runs: auto (the strongest sandbox this machine permits), strict (PID, mount
    /// and network namespaces or refuse), none (process groups only). Default: $CUDABUGS_ISOLATION,
    /// else auto.
    #[arg(long, global = true, value_enum)]
    isolation: Option<IsolationArg>,
    /// Keep every tool run's output, exit and files in this folder (a recording).
    #[arg(long, global = true, value_name = "DIR")]
    record_tools: Option<PathBuf>,
    /// Serve tool runs from a recording instead of a GPU (builds still run).
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        conflicts_with = "record_tools"
    )]
    replay_tools: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
    /// SARIF 2.1.0 (sanitize only): for editors and code-scanning services.
    Sarif,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum IsolationArg {
    Auto,
    Strict,
    None,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand)]
enum Command {
    /// Every exercise with its status, bug class and tool; the next one to do marked.
    List,
    /// Show the next hint for an exercise (each call reveals one more).
    Hint {
        /// Exercise id: `03-race`, `3` or `race`.
        id: String,
    },
    /// Restore an exercise's original file (your version is saved as a backup first).
    Reset {
        /// Exercise id: `03-race`, `3` or `race`.
        id: String,
    },
    /// Re-check the current exercise on every save; move on to the next pending one when it passes.
    Watch {
        /// Start with this exercise instead of the next pending one.
        id: Option<String>,
        /// Poll the file every 500 ms instead of using file notifications.
        #[arg(long)]
        poll: bool,
    },
    /// Build your version of an exercise, run it under its tool, check it and time it.
    Check {
        /// Exercise id: `03-race`, `3` or `race`; none: the next pending exercise (as `list` names it).
        id: Option<String>,
    },
    /// Run any CUDA program (or an exercise's file) under memcheck, racecheck, initcheck and
    /// synccheck, sandboxed: one merged report. Exit 0 clean, 1 findings, 3 a tool failed, 4 the
    /// program timed out or hung, 6 skipped (no GPU: the build ran, the tools need one).
    Sanitize {
        /// The program's .cu files, built with nvcc -G. An exercise's file (or its solution) is
        /// built with the harness and run on the exercise's cases.
        files: Vec<PathBuf>,
        /// A binary built elsewhere instead (-G gives source lines; -lineinfo lines without the
        /// debug checks; neither, no lines).
        #[arg(long, conflicts_with = "files")]
        bin: Option<PathBuf>,
        /// An extra nvcc flag, e.g. --nvcc-flag=-DN=1024 (repeat for several).
        #[arg(long = "nvcc-flag", value_name = "FLAG", allow_hyphen_values = true)]
        nvcc_flags: Vec<String>,
        /// Also profile the -O3 -lineinfo build with ncu: time, sectors per request, bank
        /// conflicts, threads per instruction, occupancy and DRAM throughput per kernel, with hints.
        #[arg(long)]
        profile: bool,
        /// The program's own arguments, after `--`.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Grade a class: every student's file for every exercise, tamper-checked, under all four
    /// tools, on the public and hidden cases, timed against the reference, with anti-cheat rules.
    /// Writes grades.csv, feedback, Gradescope results.json and a class summary into --out.
    /// `grade merge OUT` joins the journals of `--shard` runs into the gradebook.
    #[command(args_conflicts_with_subcommands = true)]
    Grade {
        #[command(subcommand)]
        action: Option<GradeAction>,
        #[command(flatten)]
        args: GradeArgs,
    },
    /// Prove every exercise fails for its intended reason and every solution passes.
    Verify {
        /// Only these exercises (all when none is named).
        ids: Vec<String>,
        /// Write the JSON verification record here.
        #[arg(long)]
        record: Option<PathBuf>,
        /// Copy the raw tool outputs (XML, CSV) into this folder.
        #[arg(long)]
        keep: Option<PathBuf>,
        /// Also run each untouched exercise under all four tools, plainly five times, and under
        /// ncu: what the book's "which tool catches what" table and timings are drawn from.
        #[arg(long)]
        survey: bool,
    },
    /// Measure this GPU's memory bandwidth (cudaMemcpy and a copy kernel) and fp32 FMA throughput,
    /// plainly and under ncu, and cache them: the 100% of every "% of peak" in the performance track.
    Peak {
        /// Measure again even where this GPU's peak is cached.
        #[arg(long)]
        again: bool,
    },
    /// Build the book (lessons with the real tool output) into book/build, or serve it.
    Book {
        /// Serve it on --addr, rebuilding when a source changes.
        #[arg(long)]
        serve: bool,
        #[arg(long, default_value = "127.0.0.1:3000")]
        addr: String,
        /// Build into this folder instead of book/build.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Manage the CUDA compiler for machines without a CUDA toolkit.
    Toolkit {
        #[command(subcommand)]
        action: ToolkitAction,
    },
    /// Make a folder with this binary and the workbook files, to run `check` on a GPU machine with
    /// the CUDA toolkit but no Rust: `./cudabugs check 03-race` inside it.
    Bundle {
        #[arg(long, default_value = "target/cudabugs-bundle")]
        out: PathBuf,
    },
}

#[derive(Subcommand)]
enum GradeAction {
    /// Join the journals in OUT (every shard's) into the gradebook; fails while a pair is missing.
    Merge {
        /// The folder the shards graded into (their --out).
        out: PathBuf,
    },
}

#[derive(clap::Args)]
struct GradeArgs {
    /// The class's submissions: a folder per student, GitHub Classroom clones, or a Gradescope
    /// export (submission_metadata.yml).
    submissions: Option<PathBuf>,
    /// Only these exercises (comma-separated ids; default: every exercise).
    #[arg(long, value_delimiter = ',')]
    exercises: Vec<String>,
    /// Where the gradebook and the journal go.
    #[arg(long, default_value = "grades")]
    out: PathBuf,
    /// The seed of the hidden cases (or $CUDABUGS_SECRET_SEED); keep it from the students.
    #[arg(long, conflicts_with = "secret")]
    secret_seed: Option<u64>,
    /// A TOML file outside the workbook: `seed = N` and extra `[[case]]` sizes per exercise.
    #[arg(long)]
    secret: Option<PathBuf>,
    /// Grade only the K-th of N shares of the pairs (1-based), into its own journal.
    #[arg(long)]
    shard: Option<grader::class::roster::Shard>,
    /// Grade every pair again, even those the journal holds (the old journal is kept beside).
    #[arg(long)]
    regrade: bool,
    /// GPUs to use, one worker each (default: every visible GPU).
    #[arg(long, value_delimiter = ',')]
    gpus: Vec<String>,
    /// Pairs of one exercise built and run together (one scheduler run).
    #[arg(long, default_value_t = 12)]
    chunk: usize,
}

#[derive(Subcommand)]
enum ToolkitAction {
    /// Install the pinned nvcc 13.0 wheels from PyPI into .cudabugs/toolkit.
    Install,
    /// Show which nvcc, compute-sanitizer and ncu would be used, and the GPU.
    Show,
}

/// The command as the user typed it, for usage lines: `cargo xtask` where cargo ran this binary,
/// the binary's own name in a bundle (`./cudabugs`).
fn typed_name() -> String {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let name = Path::new(&argv0)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.as_str() {
        "xtask" | "" => "cargo xtask".into(),
        other => format!("./{other}"),
    }
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

/// The progress file; a problem with it is shown once and never stops a command.
fn load_state(wb: &Workbook) -> grader::learner::state::Loaded {
    let loaded = grader::learner::state::load(&wb.root);
    if let Some(problem) = &loaded.problem {
        eprintln!("warning: {problem}");
    }
    loaded
}

fn save_state(state: &grader::learner::state::Loaded) {
    match state.save() {
        Ok(Some(moved)) => eprintln!(
            "note: the damaged progress file was moved to {}",
            moved.display()
        ),
        Ok(None) => {}
        Err(e) => eprintln!("warning: progress not saved: {e}"),
    }
}

/// The first exercise, in order, that has not passed yet.
fn next_pending(wb: &Workbook) -> Option<&Exercise> {
    let state = load_state(wb);
    wb.exercises.iter().find(|e| !state.state.is_done(e.id()))
}

/// After a pass: the next pending exercise, what it is about and where its lesson is.
fn say_next(wb: &Workbook) {
    match next_pending(wb) {
        Some(next) => {
            let m = &next.manifest;
            let found = match m.expected_finding() {
                Some((tool, _)) => format!("found with {}", tool.name()),
                None if m.manifest.perf.is_some() => "a kernel that is right and slow".into(),
                None => "found by its cases".into(),
            };
            println!(
                "Next: {} ({}; {found}): `cargo xtask check {}`; its lesson: book/src/{}",
                next.id(),
                m.manifest.bug_class,
                next.id(),
                m.manifest.chapter
            );
        }
        None => println!("Every exercise is done."),
    }
}

/// Check one exercise and record a pass in the progress file.
fn check_and_record(
    ctx: &Context,
    wb: &Workbook,
    ex: &Exercise,
    format: Format,
) -> grader::judge::check::CheckReport {
    let report = grader::judge::check::check(ctx, wb, ex, progress(format));
    if report.outcome == grader::judge::verdict::Outcome::Pass
        && !grader::tools::runner::interrupted()
    {
        let mut state = load_state(wb);
        state.state.mark_done(
            ex.id(),
            report.timing.as_ref().map(|t| t.ratio_to_reference),
        );
        save_state(&state);
    }
    report
}

fn show_check(
    report: &grader::judge::check::CheckReport,
    wb: &Workbook,
    ex: &Exercise,
    format: Format,
    compact: bool,
) -> Result<()> {
    // Ctrl-C killed the tools: what they "reported" is the interruption, not a verdict on the file.
    if grader::tools::runner::interrupted() {
        eprintln!("interrupted: {} was not checked", ex.id());
        return Ok(());
    }
    match format {
        Format::Json if compact => println!("{}", serde_json::to_string(report)?),
        Format::Json | Format::Sarif => print_json(report)?,
        Format::Text => print!(
            "{}",
            grader::report::check_text(report, ex, &wb.learner_path(ex))
        ),
    }
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

/// Check `current` now and on every save; after a pass, go on to the next pending exercise. Returns
/// when every exercise is done (Ctrl-C quits earlier, through the handler in `main`).
fn watch<'a>(
    ctx: &Context,
    wb: &'a Workbook,
    current: &mut &'a Exercise,
    poll: bool,
    format: Format,
) -> Result<ExitStatus> {
    loop {
        let ex = *current;
        let file = wb.learner_path(ex);
        // Watching starts before the check, so that a save during a check is not missed.
        let watcher = grader::learner::watch::FileWatcher::new(&file, poll)
            .with_context(|| format!("watching {}", wb.display_path(&file)))?;
        if let Some(why) = &watcher.fallback_reason {
            eprintln!("note: file notifications do not work here ({why}); polling instead");
        }
        loop {
            let report = check_and_record(ctx, wb, ex, format);
            show_check(&report, wb, ex, format, true)?;
            if report.outcome == grader::judge::verdict::Outcome::Pass {
                break;
            }
            if format == Format::Text {
                println!(
                    "\nwatching {} ({}); save it to check again, Ctrl-C to quit",
                    wb.display_path(&file),
                    watcher.mode
                );
            }
            watcher
                .wait_for_save()
                .with_context(|| format!("watching {}", wb.display_path(&file)))?;
        }
        let Some(next) = next_pending(wb) else {
            if format == Format::Text {
                println!("\nEvery exercise is done. Well found, well fixed.");
            }
            return Ok(ExitStatus::Pass);
        };
        *current = next;
        if format == Format::Text {
            println!("\n{} passed. Next: {}\n", ex.id(), current.id());
        }
    }
}

/// Build (or serve) the book with the `cudabugs-book` binary of this workspace: the mdbook crates are
/// compiled the first time the book is asked for (cargo shows them), never for `check`. Returns the
/// built HTML folder (none for a served book, once the server stops).
fn book(wb: &Workbook, out: Option<&Path>, serve: Option<&str>) -> Result<Option<PathBuf>> {
    use std::process::{Command as Process, Stdio};
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    if !manifest.is_file() {
        anyhow::bail!("the book is built from the workbook's sources with cargo: run `cargo xtask book` in a checkout ({} is missing)", manifest.display());
    }
    // With this package selected too, the build resolves the features `check` does and reuses its
    // grader (Cargo.toml's workspace-hack dependencies), where `cargo run` of the book alone would not.
    let mut cargo = Process::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo
        .arg("build")
        .arg("--manifest-path")
        .arg(&manifest)
        .args([
            "--package",
            "cudabugs",
            "--package",
            "cudabugs-book",
            "--bin",
            "cudabugs-book",
        ]);
    cargo.args(["--message-format", "json-render-diagnostics"]);
    if !cfg!(debug_assertions) {
        cargo.arg("--release");
    }
    let built = cargo
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo to build the book tool")?;
    if !built.status.success() {
        anyhow::bail!(
            "cargo could not build the book tool ({}); it said why above",
            built.status
        );
    }
    let tool = String::from_utf8_lossy(&built.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|m| {
            m["reason"] == "compiler-artifact"
                && m["target"]["name"] == "cudabugs-book"
                && m["executable"].is_string()
        })
        .and_then(|m| m["executable"].as_str().map(PathBuf::from))
        .context("cargo built no cudabugs-book binary")?;
    let mut run = Process::new(tool);
    run.arg(wb.root.join("book")).arg(&wb.root);
    if let Some(o) = out {
        run.arg("--out").arg(std::env::current_dir()?.join(o));
    }
    if let Some(addr) = serve {
        run.args(["--serve", addr]);
    }
    // Its progress goes to stderr; stdout is one JSON line, the result.
    let done = run
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .context("running the book tool")?;
    let said: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap_or_default();
    match (said["book"].as_str(), said["error"].as_str()) {
        (Some(dir), _) => Ok(Some(PathBuf::from(dir))),
        (None, Some(error)) => anyhow::bail!("{error}"),
        (None, None) if serve.is_some() && done.status.success() => Ok(None),
        (None, None) => anyhow::bail!("the book tool ended without a result ({})", done.status),
    }
}

/// The release binary plus the exercises and solutions: enough to run `check` without Rust.
fn bundle(wb: &Workbook, out: &Path) -> Result<()> {
    std::fs::create_dir_all(out)?;
    std::fs::copy(std::env::current_exe()?, out.join("cudabugs")).context("copying the binary")?;
    for dir in ["exercises", "solutions"] {
        workbook::copy_tree(&wb.root.join(dir), &out.join(dir))
            .with_context(|| format!("copying {dir}/"))?;
    }
    for file in ["README.md"] {
        if wb.root.join(file).is_file() {
            std::fs::copy(wb.root.join(file), out.join(file))?;
        }
    }
    Ok(())
}

/// `grade`: the class, one worker per GPU, then the gradebook.
fn grade(args: GradeArgs, settings: &Settings, format: Format) -> Result<ExitStatus> {
    use grader::class::secret::Secret;
    use grader::judge::grade::{self, ClassJob, Event};
    let Some(submissions) = args.submissions else {
        anyhow::bail!("give the submissions folder: cargo xtask grade SUBMISSIONS [--out DIR] --secret-seed N")
    };
    let wb = open_workbook()?;
    let submissions = submissions
        .canonicalize()
        .with_context(|| submissions.display().to_string())?;
    let exercises: Vec<&Exercise> = if args.exercises.is_empty() {
        wb.exercises.iter().collect()
    } else {
        args.exercises
            .iter()
            .map(|id| wb.resolve(id))
            .collect::<Result<_, _>>()?
    };
    let secret = match (args.secret_seed, &args.secret, std::env::var("CUDABUGS_SECRET_SEED").ok()) {
        (Some(seed), _, _) => Secret::from_seed(seed),
        (None, Some(file), _) => Secret::load(file, &[&wb.root, &submissions])?,
        (None, None, Some(v)) => Secret::from_seed(v.trim().parse().with_context(|| format!("CUDABUGS_SECRET_SEED={v} is not a number"))?),
        (None, None, None) => anyhow::bail!("the hidden cases need the instructor's secret: --secret-seed N, --secret FILE (outside the workbook) or CUDABUGS_SECRET_SEED"),
    };
    if let Some(problem) = secret
        .problems(&wb.exercises.iter().collect::<Vec<_>>())
        .first()
    {
        anyhow::bail!("{problem}");
    }
    let roster = grader::class::roster::discover(&submissions)?;
    let out = std::env::current_dir()?.join(&args.out);
    std::fs::create_dir_all(&out).with_context(|| out.display().to_string())?;
    let gpus = grade::worker_gpus(&args.gpus);
    let hidden: Vec<PathBuf> = [
        Some(submissions.clone()),
        Some(out.clone()),
        secret.file.clone(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut contexts = Vec::new();
    for gpu in &gpus {
        let mut ctx = context(&wb, settings, format)?;
        grade::configure_worker(&mut ctx.config, gpu.clone(), gpus.len(), &hidden);
        contexts.push(ctx);
    }
    let job = ClassJob {
        submissions,
        roster,
        exercises,
        secret,
        out: out.clone(),
        shard: args.shard,
        regrade: args.regrade,
        chunk: args.chunk,
    };
    let bar = (format == Format::Text && std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .then(|| {
            let bar = indicatif::ProgressBar::new(0);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} pairs, ETA {eta} {msg}",
                )
                .expect("a valid template"),
            );
            bar
        });
    let on_event = |e: Event| {
        if format == Format::Json {
            println!("{}", serde_json::to_string(&e).unwrap_or_default());
            return;
        }
        match (&bar, &e) {
            (Some(bar), Event::Started { pairs, already_graded, .. }) => {
                bar.set_length(*pairs as u64);
                bar.set_position(*already_graded as u64);
                bar.reset_eta();
            }
            (Some(bar), Event::Graded { student, exercise, done, .. }) => {
                bar.set_position(*done as u64);
                bar.set_message(format!("{student} / {exercise}"));
            }
            (Some(bar), Event::Note { message }) => bar.println(message),
            (None, Event::Started { layout, students, exercises, pairs, already_graded, workers }) => eprintln!(
                "  .. {} students ({}), {exercises} exercises: {pairs} pairs, {already_graded} already in the journal; workers: {}",
                students,
                layout.describe(),
                workers.join(", ")
            ),
            (None, Event::Graded { student, exercise, state, points, max, flags, done, of, .. }) => {
                let flags = if flags.is_empty() { String::new() } else { format!(" flags: {}", flags.iter().map(|f| f.key()).collect::<Vec<_>>().join(", ")) };
                eprintln!("  .. [{done}/{of}] {student} / {exercise}: {points} / {max} ({state}){flags}");
            }
            (None, Event::Note { message }) => eprintln!("  .. {message}"),
            (_, Event::Chunk { exercise, pairs, phases, .. }) => {
                let line = format!("{exercise}: {pairs} pair(s): tools and cases {:.1} s, timing {:.1} s, fresh inputs {:.1} s", phases.tools, phases.timing, phases.fresh);
                match &bar {
                    Some(bar) => bar.println(line),
                    None => eprintln!("  .. {line}"),
                }
            }
        }
    };
    let results = grade::grade_class(&wb, contexts, &job, &on_event)?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    if grader::tools::runner::interrupted() {
        eprintln!("interrupted: the journal keeps every pair graded so far; run the same command again to go on");
        return Ok(ExitStatus::Interrupted);
    }
    // A shard writes only its journal; `grade merge` makes the gradebook of them all.
    if job.shard.is_some() {
        if format == Format::Text {
            println!(
                "shard {} graded {} pair(s) into {}",
                job.shard.map(|s| s.to_string()).unwrap_or_default(),
                results.len(),
                grade::journal_path(&out, job.shard).display()
            );
        }
        return Ok(grade_exit(&results));
    }
    finish_gradebook(&out, format)
}

/// The exit code of a batch: 3 where the grader's own tools failed on a pair, 5 where an exercise
/// needs a newer GPU than this one (not gradable here), 6 where the GPU stages were skipped, else 0
/// (students' failures are grades, not errors).
fn grade_exit(results: &[grader::judge::grade::PairResult]) -> ExitStatus {
    use grader::judge::grade::PairState;
    results
        .iter()
        .map(|r| match r.state {
            PairState::ToolError { .. } => ExitStatus::ToolError,
            PairState::Unsupported { .. } => ExitStatus::NotGradable,
            PairState::Skipped { .. } => ExitStatus::Skipped,
            _ => ExitStatus::Pass,
        })
        .fold(ExitStatus::Pass, ExitStatus::worst)
}

/// Every journal in `out` into the gradebook; exit 1 while pairs are missing.
fn finish_gradebook(out: &Path, format: Format) -> Result<ExitStatus> {
    let grader::judge::grade::Merged {
        info,
        results,
        missing,
    } = grader::judge::grade::merge(out).map_err(|e| anyhow::anyhow!(e))?;
    let mut written = grader::report::gradebook::write_all(&info, &results, out)
        .with_context(|| format!("writing the gradebook into {}", out.display()))?;
    // The similarity report reads the students' files again; the exercises' texts are embedded, so the root does not matter.
    let wb = Workbook::new(out.to_path_buf(), catalog::EXERCISES, catalog::HARNESS)?;
    written.extend(
        grader::report::gradebook::write_similarity(out, &info, &wb)
            .with_context(|| format!("writing the similarity report into {}", out.display()))?,
    );
    let status = if missing.is_empty() {
        grade_exit(&results)
    } else {
        ExitStatus::Fail
    };
    match format {
        Format::Json | Format::Sarif => println!(
            "{}",
            serde_json::json!({ "event": "finished", "gradebook": out, "pairs": results.len(), "missing": missing, "files": written.len(), "exit_code": status.code() })
        ),
        Format::Text => {
            let book = grader::report::gradebook::Gradebook::new(&info, &results);
            print!("{}", grader::report::gradebook_text(&book));
            if !missing.is_empty() {
                println!(
                    "{} pair(s) not graded yet (a shard still running or failed): {}",
                    missing.len(),
                    missing
                        .iter()
                        .take(8)
                        .map(|(s, e)| format!("{s}/{e}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            println!(
                "gradebook: {} ({} files: grades.csv, feedback/, gradescope/, summary.md)",
                out.display(),
                written.len()
            );
        }
    }
    Ok(status)
}
