//! Finding nvcc, compute-sanitizer and ncu, reading their versions, and installing a pinned nvcc from
//! PyPI into the workbook where no CUDA toolkit exists.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::tools::runner::{self, Job};

/// The PyPI wheels that make a working nvcc 13.0 on a machine without the CUDA toolkit.
pub const PINNED_WHEELS: &[&str] = &[
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-cuda-runtime==13.0.88",
    "nvidia-cuda-cccl==13.0.85",
    // CUPTI's headers, for the harness's record of what the driver ran (harness/driver.cuh).
    "nvidia-cuda-cupti==13.0.85",
    "nvidia-nvvm==13.0.88",
    // cuobjdump, for the SASS check of judge::tool_aware, and the nvdisasm it runs for `-sass`: the
    // oldest on PyPI are 13.2 (no 13.0 wheel); they read nvcc 13.0's binaries.
    "nvidia-cuda-cuobjdump==13.2.51",
    "nvidia-cuda-nvdisasm==13.2.51",
];

/// Where `toolkit install` puts the wheels, relative to the workbook root.
pub const LOCAL_TOOLKIT: &str = ".cudabugs/toolkit";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolName {
    Nvcc,
    ComputeSanitizer,
    Ncu,
    Cuobjdump,
    /// binutils' objdump, for what a compiled host object reaches (`judge::reach`).
    Objdump,
}

impl ToolName {
    pub fn binary(self) -> &'static str {
        match self {
            ToolName::Nvcc => "nvcc",
            ToolName::ComputeSanitizer => "compute-sanitizer",
            ToolName::Ncu => "ncu",
            ToolName::Cuobjdump => "cuobjdump",
            ToolName::Objdump => "objdump",
        }
    }
    /// The environment variable that overrides the search.
    pub fn env_override(self) -> &'static str {
        match self {
            ToolName::Nvcc => "CUDABUGS_NVCC",
            ToolName::ComputeSanitizer => "CUDABUGS_COMPUTE_SANITIZER",
            ToolName::Ncu => "CUDABUGS_NCU",
            ToolName::Cuobjdump => "CUDABUGS_CUOBJDUMP",
            ToolName::Objdump => "CUDABUGS_OBJDUMP",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Nvcc {
    pub path: PathBuf,
    /// Extra flags a pip-installed nvcc needs (its runtime library folder).
    pub extra_flags: Vec<String>,
    /// The toolkit's CUPTI, where it has one: the harness compiles its record of what the driver
    /// ran against the headers and opens the library at run time (harness/driver.cuh).
    pub cupti: Option<Cupti>,
}

/// A CUDA toolkit's CUPTI: the folder of `cupti.h` and the shared library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cupti {
    pub include: PathBuf,
    pub library: PathBuf,
}

impl Cupti {
    /// The CUPTI of the toolkit whose nvcc is `nvcc`: in `extras/CUPTI` (the toolkit's installer),
    /// beside the runtime (distributions' packages), or in the wheel's `include` and `lib` (PyPI).
    pub fn beside(nvcc: &Path) -> Option<Cupti> {
        let root = nvcc.parent()?.parent()?;
        let include = [
            root.join("extras/CUPTI/include"),
            root.join("include"),
            root.join("targets/x86_64-linux/include"),
        ]
        .into_iter()
        .find(|d| d.join("cupti.h").is_file())?;
        let library = [
            "extras/CUPTI/lib64",
            "lib64",
            "lib",
            "targets/x86_64-linux/lib",
        ]
        .iter()
        .flat_map(|d| {
            ["libcupti.so", "libcupti.so.13"]
                .iter()
                .map(move |f| root.join(d).join(f))
        })
        .find(|f| f.is_file())?;
        Some(Cupti { include, library })
    }
}

#[derive(Debug, Clone)]
pub struct Toolchain {
    pub nvcc: Option<Nvcc>,
    pub sanitizer: Option<PathBuf>,
    pub ncu: Option<PathBuf>,
    /// For the compiled kernels' clock reads (`judge::tool_aware`).
    pub cuobjdump: Option<PathBuf>,
    /// For what the compiled host code reaches (`judge::reach`).
    pub objdump: Option<PathBuf>,
}

fn candidates(tool: ToolName, root: &Path) -> Vec<PathBuf> {
    let bin = tool.binary();
    let mut list = Vec::new();
    if let Some(p) = crate::environment::path(tool.env_override()) {
        list.push(p);
    }
    for var in crate::environment::CUDA_HOMES {
        if let Some(home) = crate::environment::path(var) {
            list.push(home.join("bin").join(bin));
        }
    }
    if let Ok(p) = which::which(bin) {
        list.push(p);
    }
    list.push(PathBuf::from("/usr/local/cuda/bin").join(bin));
    match tool {
        ToolName::Nvcc => list.push(root.join(LOCAL_TOOLKIT).join("nvidia/cu13/bin/nvcc")),
        ToolName::Cuobjdump => {
            list.push(root.join(LOCAL_TOOLKIT).join("nvidia/cu13/bin/cuobjdump"))
        }
        ToolName::Ncu => {
            // ncu also ships outside the toolkit's bin folder.
            if let Ok(dirs) = std::fs::read_dir("/opt/nvidia/nsight-compute") {
                let mut found: Vec<PathBuf> = dirs
                    .filter_map(Result::ok)
                    .map(|d| d.path().join("ncu"))
                    .collect();
                found.sort();
                list.extend(found.into_iter().rev());
            }
        }
        ToolName::ComputeSanitizer => {}
        ToolName::Objdump => list.push(PathBuf::from("/usr/bin/objdump")),
    }
    list
}

pub fn find(tool: ToolName, root: &Path) -> Option<PathBuf> {
    candidates(tool, root).into_iter().find(|p| p.is_file())
}

impl Toolchain {
    pub fn discover(root: &Path) -> Toolchain {
        let nvcc = find(ToolName::Nvcc, root).map(|path| {
            // The pip wheels keep libcudart next to bin/, where nvcc's own profile does not look.
            let lib = path.parent().and_then(Path::parent).map(|p| p.join("lib"));
            let extra_flags = match lib {
                Some(lib)
                    if lib.join("libcudart_static.a").is_file()
                        && path.components().any(|c| c.as_os_str() == "cu13") =>
                {
                    vec![format!("-L{}", lib.display())]
                }
                _ => Vec::new(),
            };
            let cupti = Cupti::beside(&path);
            Nvcc {
                path,
                extra_flags,
                cupti,
            }
        });
        Toolchain {
            nvcc,
            sanitizer: find(ToolName::ComputeSanitizer, root),
            ncu: find(ToolName::Ncu, root),
            cuobjdump: find(ToolName::Cuobjdump, root),
            objdump: find(ToolName::Objdump, root),
        }
    }
}

/// The last non-empty line of `TOOL --version` (e.g. "Build cuda_13.0.r13.0/compiler.36424714_0").
pub fn version(path: &Path) -> Option<String> {
    let done = runner::run(&Job::new(path, Duration::from_secs(30)).arg("--version")).ok()?;
    let text = done.stdout.text();
    let line = text.lines().rev().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.to_string())
}

/// nvcc's release ("13.0") from its `--version` text.
pub fn nvcc_release(path: &Path) -> Option<String> {
    let done = runner::run(&Job::new(path, Duration::from_secs(30)).arg("--version")).ok()?;
    let text = done.stdout.text();
    let after = text.split("release ").nth(1)?;
    Some(after.split(',').next()?.trim().to_string())
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("python3 is needed to install nvcc from PyPI and was not found")]
    NoPython,
    #[error(transparent)]
    Spawn(#[from] runner::SpawnError),
    #[error("pip failed ({exit}):\n{output}")]
    Pip { exit: String, output: String },
    #[error("pip finished but {0} is missing")]
    Missing(PathBuf),
}

/// The one command that gets an nvcc: the pinned wheels, into `<root>/.cudabugs/toolkit`.
pub fn install_job(root: &Path) -> Result<Job, InstallError> {
    let python = which::which("python3").map_err(|_| InstallError::NoPython)?;
    Ok(Job::new(python, Duration::from_secs(1800))
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--upgrade",
            // Every wheel it needs is pinned above (the same folder as pip's own resolution on
            // 2026-11-30): resolving their dependencies again took about a second of a first check.
            "--no-deps",
            "--target",
        ])
        .arg(root.join(LOCAL_TOOLKIT))
        .args(PINNED_WHEELS.iter().copied()))
}

/// About what the pinned wheels take unpacked (277 MB on 2026-11-25, and 44 MB of CUPTI since
/// 2026-11-29), for the progress line.
pub const INSTALLED_MB: u64 = 321;

/// Sends the megabytes pip has unpacked into the toolkit folder, each time they grow, while the
/// install runs (pip itself is quiet: its own bar is meant for a terminal, not a log).
#[derive(Debug)]
struct Unpacked {
    dir: PathBuf,
    grown: std::sync::mpsc::Sender<u64>,
}

impl runner::Driver for Unpacked {
    fn drive(&self, run: &runner::Running) -> runner::Then {
        let mut said = crate::untrusted::folder_bytes(&self.dir) >> 20;
        let mut last = std::time::Instant::now();
        while run.alive() {
            std::thread::sleep(Duration::from_millis(200));
            if last.elapsed() < Duration::from_secs(2) {
                continue;
            }
            last = std::time::Instant::now();
            let mb = crate::untrusted::folder_bytes(&self.dir) >> 20;
            if mb > said {
                let _ = self.grown.send(mb);
                said = mb;
            }
        }
        runner::Then::Wait
    }
}

/// Install the pinned wheels; `report` hears the megabytes unpacked so far as they grow.
pub fn install(root: &Path, mut report: impl FnMut(u64)) -> Result<PathBuf, InstallError> {
    let mut job = install_job(root)?;
    let (grown, heard) = std::sync::mpsc::channel();
    job.driver = Some(std::sync::Arc::new(Unpacked {
        dir: root.join(LOCAL_TOOLKIT),
        grown,
    }));
    let done = std::thread::scope(|scope| {
        let installing = scope.spawn(move || {
            let done = runner::run(&job);
            drop(job); // the last sender: the loop below ends
            done
        });
        for mb in heard {
            report(mb);
        }
        installing.join().expect("the install thread")
    })?;
    if !done.success() {
        return Err(InstallError::Pip {
            exit: done.describe_exit(),
            output: done.output(),
        });
    }
    let nvcc = root.join(LOCAL_TOOLKIT).join("nvidia/cu13/bin/nvcc");
    if nvcc.is_file() {
        Ok(nvcc)
    } else {
        Err(InstallError::Missing(nvcc))
    }
}
