//! What GPU this machine has, through cudarc, without panicking where no driver exists.

use serde::Serialize;

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct GpuInfo {
    pub name: String,
    pub compute_capability: (i32, i32),
    pub memory_bytes: usize,
    /// The CUDA version the driver supports, e.g. "13.0".
    pub driver_cuda_version: String,
}

impl GpuInfo {
    /// The `-arch` for nvcc: `sm_90` for an H100/H200.
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }
}

#[derive(Debug, Clone)]
pub enum GpuStatus {
    /// No libcuda on this machine: the CPU-only case.
    NoDriver,
    /// A driver exists but no usable device (or it failed to initialise).
    Unusable(String),
    Present(GpuInfo),
}

impl GpuStatus {
    pub fn is_present(&self) -> bool {
        matches!(self, GpuStatus::Present(_))
    }
}

/// Who the driver lets read the GPU's performance counters (what ncu needs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterAccess {
    /// Every user (`RmProfilingAdminOnly: 0`).
    Open,
    /// Administrators only (`RmProfilingAdminOnly: 1`, the driver's
    /// `NVreg_RestrictProfilingToAdminUsers=1`, the default on many installs).
    AdminOnly,
    /// No driver, or it does not say.
    Unknown,
}

/// The driver's counter setting, from `/proc/driver/nvidia/params`.
pub fn counters() -> CounterAccess {
    let text = std::fs::read_to_string("/proc/driver/nvidia/params").unwrap_or_default();
    match text
        .lines()
        .find_map(|l| l.strip_prefix("RmProfilingAdminOnly:"))
        .map(str::trim)
    {
        Some("0") => CounterAccess::Open,
        Some(_) => CounterAccess::AdminOnly,
        None => CounterAccess::Unknown,
    }
}

/// The GPU's settings that decide how fast any kernel runs, which no grader changes and no
/// submission may: read at the start of a batch and before each timed phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub compute_mode: String,
    pub application_clocks: String,
    pub persistence: String,
}

/// This machine's GPU `gpu` (CUDA_VISIBLE_DEVICES's index, none: the first) as nvidia-smi reads
/// it; None where there is no nvidia-smi or it says nothing.
pub fn settings(gpu: Option<&str>) -> Option<Settings> {
    let smi = which::which("nvidia-smi").ok()?;
    let job = crate::tools::runner::Job::new(smi, std::time::Duration::from_secs(30))
        .args(["--query-gpu=compute_mode,clocks.applications.graphics,clocks.applications.memory,persistence_mode", "--format=csv,noheader", "-i", gpu.unwrap_or("0")]);
    let done = crate::tools::runner::run(&job)
        .ok()
        .filter(|d| d.success())?;
    let line = done.stdout.text().lines().next()?.to_string();
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    let [mode, graphics, memory, persistence] = f[..] else {
        return None;
    };
    Some(Settings {
        compute_mode: mode.into(),
        application_clocks: format!("{graphics} / {memory}"),
        persistence: persistence.into(),
    })
}

impl Settings {
    /// What differs from `before`, in words (None: nothing).
    pub fn changed_since(&self, before: &Settings) -> Option<String> {
        let mut what = Vec::new();
        if self.compute_mode != before.compute_mode {
            what.push(format!(
                "compute mode {} -> {}",
                before.compute_mode, self.compute_mode
            ));
        }
        if self.application_clocks != before.application_clocks {
            what.push(format!(
                "application clocks {} -> {}",
                before.application_clocks, self.application_clocks
            ));
        }
        if self.persistence != before.persistence {
            what.push(format!(
                "persistence mode {} -> {}",
                before.persistence, self.persistence
            ));
        }
        (!what.is_empty()).then(|| what.join(", "))
    }
}

/// The faked GPU, where the test seam is set: "NAME;MAJOR.MINOR". `CUDABUGS_FAKE_GPU="NVIDIA
/// A100;8.0"` makes `probe` report that GPU (and `count` one) without touching a driver, so that the
/// capability gate can be tested on a machine with no GPU. Nothing that needs a real GPU works under
/// it; it is for tests of what happens before.
fn fake() -> Option<Result<GpuInfo, BadFakeGpu>> {
    crate::environment::text(crate::environment::FAKE_GPU).map(|t| parse_fake(&t))
}

/// The fake-GPU seam set to something that names no GPU.
#[derive(Debug, thiserror::Error)]
#[error("{var}={text:?}: write it as \"NAME;MAJOR.MINOR\", e.g. \"NVIDIA A100;8.0\"")]
struct BadFakeGpu {
    var: &'static str,
    text: String,
}

fn parse_fake(text: &str) -> Result<GpuInfo, BadFakeGpu> {
    let parsed = text.split_once(';').and_then(|(name, cc)| {
        let (major, minor) = cc.trim().split_once('.')?;
        Some(GpuInfo {
            name: name.trim().to_string(),
            compute_capability: (major.parse().ok()?, minor.parse().ok()?),
            memory_bytes: 0,
            driver_cuda_version: "fake".into(),
        })
    });
    parsed.ok_or_else(|| BadFakeGpu {
        var: crate::environment::FAKE_GPU,
        text: text.to_string(),
    })
}

/// Query device 0. cudarc panics when libcuda is missing, so ask first whether it is present. Only
/// device queries, no context: creating one took 190-380 ms on an H200, a third of a warm `check`.
pub fn probe() -> GpuStatus {
    match fake() {
        Some(Ok(info)) => return GpuStatus::Present(info),
        Some(Err(why)) => return GpuStatus::Unusable(why.to_string()),
        None => {}
    }
    // SAFETY: this only tries to dlopen libcuda.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return GpuStatus::NoDriver;
    }
    let query = || -> Result<GpuInfo, cudarc::driver::DriverError> {
        use cudarc::driver::sys;
        // SAFETY: plain driver queries into local values; the driver is loaded (checked above).
        unsafe {
            sys::cuInit(0).result()?;
            let mut dev: sys::CUdevice = 0;
            sys::cuDeviceGet(&mut dev, 0).result()?;
            let mut name = [0 as std::ffi::c_char; 256];
            sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, dev).result()?;
            let attr = |a: sys::CUdevice_attribute| -> Result<i32, cudarc::driver::DriverError> {
                let mut v = 0;
                sys::cuDeviceGetAttribute(&mut v, a, dev).result()?;
                Ok(v)
            };
            let major =
                attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
            let minor =
                attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
            let mut memory: usize = 0;
            sys::cuDeviceTotalMem_v2(&mut memory, dev).result()?;
            let mut version: std::ffi::c_int = 0;
            sys::cuDriverGetVersion(&mut version).result()?;
            Ok(GpuInfo {
                name: std::ffi::CStr::from_ptr(name.as_ptr())
                    .to_string_lossy()
                    .into_owned(),
                compute_capability: (major, minor),
                memory_bytes: memory,
                driver_cuda_version: format!("{}.{}", version / 1000, (version % 1000) / 10),
            })
        }
    };
    match std::panic::catch_unwind(query) {
        Ok(Ok(info)) => GpuStatus::Present(info),
        Ok(Err(e)) => GpuStatus::Unusable(e.to_string()),
        Err(_) => GpuStatus::Unusable("the CUDA driver library could not be used".into()),
    }
}

/// How many GPUs this process may use (the driver applies `CUDA_VISIBLE_DEVICES`); 0 without a
/// usable driver.
pub fn count() -> usize {
    if let Some(fake) = fake() {
        return usize::from(fake.is_ok());
    }
    // SAFETY: this only tries to dlopen libcuda.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return 0;
    }
    let query = || -> Result<i32, cudarc::driver::DriverError> {
        use cudarc::driver::sys;
        // SAFETY: plain driver queries into a local value; the driver is loaded (checked above).
        unsafe {
            sys::cuInit(0).result()?;
            let mut n = 0;
            sys::cuDeviceGetCount(&mut n).result()?;
            Ok(n)
        }
    };
    match std::panic::catch_unwind(query) {
        Ok(Ok(n)) => n.max(0) as usize,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fake_gpu_seam_reports_the_named_gpu_or_says_how_to_write_it() {
        // The variable itself is exercised by the CLI tests (a process of their own each).
        let info = parse_fake("NVIDIA A100;8.0").unwrap();
        assert_eq!(
            (info.name.as_str(), info.compute_capability, info.arch()),
            ("NVIDIA A100", (8, 0), "sm_80".to_string())
        );
        assert!(parse_fake("A100")
            .unwrap_err()
            .to_string()
            .contains("NAME;MAJOR.MINOR"));
        assert!(parse_fake("A100;eight").is_err());
    }
}
