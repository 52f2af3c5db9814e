//! The command line: every command, its options and their help.

use super::*;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    about = "cudabugs: find and fix silent CUDA bugs with the real tools",
    version
)]
pub(crate) struct Cli {
    /// Output format: text for people, json (stable fields) for scripts and editors, events (a JSON
    /// line per event, every command alike) for tools that follow a run as it goes.
    #[arg(long, global = true, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    /// The same as `--format json`.
    #[arg(long, global = true, conflicts_with = "format")]
    pub(crate) json: bool,
    /// Also say how learner code is confined and trusted (the sandbox and trust lines).
    #[arg(long, short, global = true)]
    pub(crate) verbose: bool,
    /// Colours: auto follows the terminal, NO_COLOR and CLICOLOR_FORCE.
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto)]
    pub(crate) color: ColorWhen,
    /// nvcc -arch to build for (default: the GPU's compute capability, else sm_90).
    #[arg(long, global = true)]
    pub(crate) arch: Option<String>,
    /// How learner code runs: auto (the strongest sandbox this machine permits), strict (PID, mount
    /// and network namespaces or refuse), none (process groups only). Default: $CUDABUGS_ISOLATION,
    /// else auto.
    #[arg(long, global = true, value_enum)]
    pub(crate) isolation: Option<IsolationArg>,
    /// Keep every tool run's output, exit and files in this folder (a recording).
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) record_tools: Option<PathBuf>,
    /// Serve tool runs from a recording instead of a GPU (builds still run).
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        conflicts_with = "record_tools"
    )]
    pub(crate) replay_tools: Option<PathBuf>,
    #[command(subcommand)]
    pub(crate) command: Command,
}

impl Cli {
    /// `--format`, or json where `--json` was given.
    pub(crate) fn format(&self) -> Format {
        if self.json {
            Format::Json
        } else {
            self.format
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Text,
    Json,
    /// SARIF 2.1.0 (sanitize only): for editors and code-scanning services.
    Sarif,
    /// JSON Lines, one event per line, the same schema for every command
    /// (book/src/events.schema.json): progress, notes, the result, and `finished` with the exit code.
    Events,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum IsolationArg {
    Auto,
    Strict,
    None,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand)]
pub(crate) enum Command {
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
pub(crate) enum GradeAction {
    /// Join the journals in OUT (every shard's) into the gradebook; fails while a pair is missing.
    Merge {
        /// The folder the shards graded into (their --out).
        out: PathBuf,
    },
}

#[derive(clap::Args)]
pub(crate) struct GradeArgs {
    /// The class's submissions: a folder per student, GitHub Classroom clones, or a Gradescope
    /// export (submission_metadata.yml).
    pub(crate) submissions: Option<PathBuf>,
    /// Only these exercises (comma-separated ids; default: every exercise).
    #[arg(long, value_delimiter = ',')]
    pub(crate) exercises: Vec<String>,
    /// Where the gradebook and the journal go.
    #[arg(long, default_value = "grades")]
    pub(crate) out: PathBuf,
    /// The seed of the hidden cases (or $CUDABUGS_SECRET_SEED); keep it from the students.
    #[arg(long, conflicts_with = "secret")]
    pub(crate) secret_seed: Option<u64>,
    /// A TOML file outside the workbook: `seed = N` and extra `[[case]]` sizes per exercise.
    #[arg(long)]
    pub(crate) secret: Option<PathBuf>,
    /// Grade only the K-th of N shares of the pairs (1-based), into its own journal.
    #[arg(long)]
    pub(crate) shard: Option<grader::class::roster::Shard>,
    /// Grade every pair again, even those the journal holds (the old journal is kept beside).
    #[arg(long)]
    pub(crate) regrade: bool,
    /// GPUs to use, one worker each (default: every visible GPU).
    #[arg(long, value_delimiter = ',')]
    pub(crate) gpus: Vec<String>,
    /// Pairs of one exercise built and run together (one scheduler run).
    #[arg(long, default_value_t = 12)]
    pub(crate) chunk: usize,
}

#[derive(Subcommand)]
pub(crate) enum ToolkitAction {
    /// Install the pinned nvcc 13.0 wheels from PyPI into .cudabugs/toolkit.
    Install,
    /// Show which nvcc, compute-sanitizer and ncu would be used, and the GPU.
    Show,
}

/// The command as the user typed it, for usage lines: `cargo xtask` where cargo ran this binary,
/// the binary's own name in a bundle (`./cudabugs`).
pub(crate) fn typed_name() -> String {
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
