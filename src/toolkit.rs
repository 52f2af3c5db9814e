//! `toolkit install` and `toolkit show`.

use super::*;
use anstream::eprintln;

/// `toolkit install`: nvcc and its libraries from NVIDIA's wheels, into the workbook.
pub(crate) fn toolkit_install(out: &'static dyn Reporter) -> Result<ExitStatus> {
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
    out.result(&Shown(&serde_json::json!({ "nvcc": nvcc }), || {
        format!("nvcc ready: {}\n", wb.display_path(&nvcc))
    }))?;
    Ok(ExitStatus::Pass)
}

/// `toolkit show`: every tool found, the GPU and the sandbox this machine permits.
pub(crate) fn toolkit_show(out: &'static dyn Reporter) -> Result<ExitStatus> {
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
    let table: std::collections::BTreeMap<_, _> = found.iter().cloned().collect();
    out.result(&Shown(&table, || {
        found
            .iter()
            .map(|(name, value)| {
                format!(
                    "{:<18} {}\n",
                    format!("{}:", name.replace('_', "-")),
                    value.as_deref().unwrap_or("not found")
                )
            })
            .collect()
    }))?;
    Ok(ExitStatus::Pass)
}
