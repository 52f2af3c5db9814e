//! `book` and `bundle`: the lessons built with this workspace's book tool, and the folder that runs `check` without Rust.

use super::*;

/// Build (or serve) the book with the `cudabugs-book` binary of this workspace: the mdbook crates are
/// compiled the first time the book is asked for (cargo shows them), never for `check`. Returns the
/// built HTML folder (none for a served book, once the server stops).
pub(crate) fn book(
    wb: &Workbook,
    out: Option<&Path>,
    serve: Option<&str>,
) -> Result<Option<PathBuf>> {
    use std::process::{Command as Process, Stdio};
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    if !manifest.is_file() {
        anyhow::bail!("the book is built from the workbook's sources with cargo: run `cargo xtask book` in a checkout ({} is missing)", manifest.display());
    }
    // With this package selected too, the build resolves the features `check` does and reuses its
    // grader (Cargo.toml's workspace-hack dependencies), where `cargo run` of the book alone would not.
    let mut cargo = Process::new(
        grader::environment::path(grader::environment::CARGO).unwrap_or_else(|| "cargo".into()),
    );
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
pub(crate) fn bundle(wb: &Workbook, out: &Path) -> Result<()> {
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
