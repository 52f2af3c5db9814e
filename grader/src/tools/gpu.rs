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
        format!("sm_{}{}", self.compute_capability.0, self.compute_capability.1)
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

/// Query device 0. cudarc panics when libcuda is missing, so ask first whether it is present.
pub fn probe() -> GpuStatus {
    // SAFETY: this only tries to dlopen libcuda.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return GpuStatus::NoDriver;
    }
    let query = || -> Result<GpuInfo, cudarc::driver::DriverError> {
        let ctx = cudarc::driver::CudaContext::new(0)?;
        let mut version: std::ffi::c_int = 0;
        // SAFETY: cuDriverGetVersion writes one int; the driver is loaded (checked above).
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) }.result()?;
        Ok(GpuInfo {
            name: ctx.name()?,
            compute_capability: ctx.compute_capability()?,
            memory_bytes: ctx.total_mem()?,
            driver_cuda_version: format!("{}.{}", version / 1000, (version % 1000) / 10),
        })
    };
    match std::panic::catch_unwind(query) {
        Ok(Ok(info)) => GpuStatus::Present(info),
        Ok(Err(e)) => GpuStatus::Unusable(e.to_string()),
        Err(_) => GpuStatus::Unusable("the CUDA driver library could not be used".into()),
    }
}
