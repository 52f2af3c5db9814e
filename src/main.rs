//! `cargo xtask`: the workbook's command line, a thin layer over the `grader` library.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand, ValueEnum};
use grader::context::{Context, Options};
use grader::workbook::{self, Workbook};

mod catalog {
    include!(concat!(env!("OUT_DIR"), "/embed/catalog.rs"));
}

#[derive(Parser)]
#[command(name = "cargo xtask", about = "cudabugs: find and fix silent CUDA bugs with the real tools", version)]
struct Cli {
    /// Output format: text for people, json (stable fields) for scripts and editors.
    #[arg(long, global = true, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// nvcc -arch to build for (default: the GPU's compute capability, else sm_90).
    #[arg(long, global = true)]
    arch: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Build your version of an exercise, run it under its tool, check it and time it.
    Check {
        /// Exercise id: `03-race`, `3` or `race`.
        id: String,
    },
    /// Prove every exercise fails for its intended reason and every solution passes.
    Verify {
        /// Only this exercise.
        id: Option<String>,
        /// Write the JSON verification record here.
        #[arg(long)]
        record: Option<PathBuf>,
        /// Copy the raw tool outputs (XML, CSV) into this folder.
        #[arg(long)]
        keep: Option<PathBuf>,
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
enum ToolkitAction {
    /// Install the pinned nvcc 13.0 wheels from PyPI into .cudabugs/toolkit.
    Install,
    /// Show which nvcc, compute-sanitizer and ncu would be used, and the GPU.
    Show,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn open_workbook() -> Result<Workbook> {
    let cwd = std::env::current_dir()?;
    let root = workbook::find_root(&cwd)?;
    Ok(Workbook::new(root, catalog::EXERCISES, catalog::HARNESS)?)
}

fn progress(format: Format) -> impl FnMut(&str) + Send {
    move |line: &str| {
        if format == Format::Text {
            eprintln!("  .. {line}");
        }
    }
}

fn context(wb: &Workbook, cli_arch: Option<String>, format: Format) -> Result<Context> {
    let install_toolkit = std::env::var_os("CUDABUGS_NO_INSTALL").is_none();
    Ok(Context::new(wb, &Options { arch: cli_arch, install_toolkit }, progress(format))?)
}

fn print_json(value: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

fn run(cli: Cli) -> Result<i32> {
    let format = cli.format;
    match cli.command {
        Command::Check { id } => {
            let wb = open_workbook()?;
            let ex = wb.resolve(&id)?;
            let ctx = context(&wb, cli.arch, format)?;
            let report = grader::check::check(&ctx, &wb, ex, progress(format));
            match format {
                Format::Json => print_json(&report)?,
                Format::Text => print!("{}", grader::report::check_text(&report, ex, &wb.learner_path(ex))),
            }
            Ok(report.outcome.exit_code())
        }
        Command::Verify { id, record, keep } => {
            let wb = open_workbook()?;
            let selected: Vec<_> = match &id {
                Some(id) => vec![wb.resolve(id)?],
                None => wb.exercises.iter().collect(),
            };
            let ctx = context(&wb, cli.arch, format)?;
            let opts = grader::verify::VerifyOptions { keep };
            let result = grader::verify::verify(&ctx, &wb, &selected, &opts, progress(format));
            if let Some(path) = &record {
                std::fs::write(path, serde_json::to_string_pretty(&result)? + "\n").with_context(|| format!("writing {}", path.display()))?;
            }
            match format {
                Format::Json => print_json(&result)?,
                Format::Text => print!("{}", grader::report::verify_text(&result)),
            }
            Ok(result.outcome.exit_code())
        }
        Command::Toolkit { action: ToolkitAction::Install } => {
            let wb = open_workbook()?;
            eprintln!("installing {} into {}", grader::toolchain::PINNED_WHEELS.join(" "), grader::toolchain::LOCAL_TOOLKIT);
            let nvcc = grader::toolchain::install(&wb.root)?;
            println!("nvcc ready: {}", wb.display_path(&nvcc));
            Ok(0)
        }
        Command::Toolkit { action: ToolkitAction::Show } => {
            let wb = open_workbook()?;
            let tools = grader::toolchain::Toolchain::discover(&wb.root);
            let show = |p: Option<&Path>| p.map(|p| p.display().to_string()).unwrap_or_else(|| "not found".into());
            println!("nvcc:              {}", show(tools.nvcc.as_ref().map(|n| n.path.as_path())));
            println!("compute-sanitizer: {}", show(tools.sanitizer.as_deref()));
            println!("ncu:               {}", show(tools.ncu.as_deref()));
            match grader::gpu::probe() {
                grader::gpu::GpuStatus::Present(g) => println!("GPU:               {} ({}, CUDA {})", g.name, g.arch(), g.driver_cuda_version),
                grader::gpu::GpuStatus::NoDriver => println!("GPU:               none (no NVIDIA driver)"),
                grader::gpu::GpuStatus::Unusable(e) => println!("GPU:               unusable: {e}"),
            }
            Ok(0)
        }
        Command::Bundle { out } => {
            let wb = open_workbook()?;
            let out = if out.is_absolute() { out } else { wb.root.join(out) };
            bundle(&wb, &out)?;
            println!("bundle ready: {} (run ./cudabugs check 03-race inside it)", out.display());
            Ok(0)
        }
    }
}

/// The release binary plus the exercises and solutions: enough to run `check` without Rust.
fn bundle(wb: &Workbook, out: &Path) -> Result<()> {
    std::fs::create_dir_all(out)?;
    std::fs::copy(std::env::current_exe()?, out.join("cudabugs")).context("copying the binary")?;
    for dir in ["exercises", "solutions"] {
        copy_dir(&wb.root.join(dir), &out.join(dir))?;
    }
    for file in ["README.md"] {
        if wb.root.join(file).is_file() {
            std::fs::copy(wb.root.join(file), out.join(file))?;
        }
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
