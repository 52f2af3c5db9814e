//! What a check or verification needs before it starts: the tools, the GPU, the -arch, the harness.

use crate::gpu::{self, GpuInfo, GpuStatus};
use crate::nvcc::{self, Harness};
use crate::runner::{self, Job};
use crate::toolchain::{self, Toolchain};
use crate::workbook::Workbook;

/// The -arch used when no GPU tells us better (H100/H200).
pub const DEFAULT_ARCH: &str = "sm_90";

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Override the -arch (default: the GPU's, else sm_90).
    pub arch: Option<String>,
    /// Install the pinned nvcc wheels when no nvcc is found.
    pub install_toolkit: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error("no nvcc found (looked at $CUDABUGS_NVCC, $CUDA_HOME/bin, PATH, /usr/local/cuda/bin and {local}).\n\
             Get one with: cargo xtask toolkit install   (pinned nvcc 13.0 wheels from PyPI into {local})")]
    NoNvcc { local: String },
    #[error("installing nvcc failed: {0}")]
    Install(#[from] toolchain::InstallError),
    #[error("preparing the harness failed: {0}")]
    Harness(#[from] nvcc::BuildError),
}

pub struct Context {
    pub tools: Toolchain,
    pub nvcc: toolchain::Nvcc,
    pub gpu: GpuStatus,
    pub arch: String,
    pub harness: Harness,
}

impl Context {
    pub fn new(wb: &Workbook, opts: &Options, mut say: impl FnMut(&str)) -> Result<Context, ContextError> {
        let mut tools = Toolchain::discover(&wb.root);
        if tools.nvcc.is_none() && opts.install_toolkit {
            say(&format!(
                "no nvcc found: installing the pinned nvcc 13.0 wheels from PyPI into {} (once; set CUDABUGS_NO_INSTALL=1 to stop this)",
                toolchain::LOCAL_TOOLKIT
            ));
            toolchain::install(&wb.root)?;
            tools = Toolchain::discover(&wb.root);
        }
        let nvcc = tools.nvcc.clone().ok_or_else(|| ContextError::NoNvcc {
            local: wb.root.join(toolchain::LOCAL_TOOLKIT).display().to_string(),
        })?;
        let gpu = gpu::probe();
        let arch = opts.arch.clone().unwrap_or_else(|| match &gpu {
            GpuStatus::Present(info) => info.arch(),
            _ => DEFAULT_ARCH.to_string(),
        });
        let harness = nvcc::prepare_harness(&nvcc, wb.harness, &wb.work_dir().join("harness"))?;
        Ok(Context { tools, nvcc, gpu, arch, harness })
    }

    pub fn gpu_info(&self) -> Option<&GpuInfo> {
        match &self.gpu {
            GpuStatus::Present(info) => Some(info),
            _ => None,
        }
    }

    /// Why the GPU steps cannot run here, if they cannot.
    pub fn no_gpu_reason(&self) -> Option<String> {
        match &self.gpu {
            GpuStatus::Present(_) => None,
            GpuStatus::NoDriver => Some("no NVIDIA driver on this machine: the sanitizer, correctness and timing steps need a GPU".into()),
            GpuStatus::Unusable(e) => Some(format!("the GPU cannot be used ({e}): the remaining steps need one")),
        }
    }
}

/// The NVIDIA driver's version string (e.g. "580.159.04"), from nvidia-smi where it exists.
pub fn driver_version() -> Option<String> {
    let smi = which::which("nvidia-smi").ok()?;
    let job = Job::new(smi, std::time::Duration::from_secs(30)).args(["--query-gpu=driver_version", "--format=csv,noheader"]);
    let done = runner::run(&job).ok().filter(|d| d.success())?;
    done.stdout.text().lines().next().map(|l| l.trim().to_string())
}
