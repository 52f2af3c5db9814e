//! How much GPU memory a run holds, as the driver counts it (NVML), so that a run that shares the
//! GPU with others is held to its share of the memory: `runner::supervise` kills it at once, and
//! the stage fails and says why. Measured from outside the program: NVML lists every process with
//! a context on the GPU and the memory the driver gave it, whatever API the program allocated
//! through.
//!
//! Killed, not run again alone: on an H200, the `hog` fixture (all free memory for 3 s, in each of
//! its runs) run again alone after its classmates' runs added 40-50 s to a class graded in 35-44 s
//! without it; killed, it added nothing measurable (book/gpu-runs/2026-11-30-hog-50/). The runs
//! measured hold well under a share (03-race's: 0.4-0.6 GiB of an H200's 8.7 GiB); the catalog's
//! other exercises were not surveyed, and an honest run over its share fails saying why.
//!
//! NVML is opened with libloading (already in the tree for cudarc) and four of its functions:
//! the `nvml-wrapper` crate would add its procedural macros to every learner's first build.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How often a watched run's memory is read: on an H200 the `hog` fixture, which takes the free
/// memory in a loop of 256 MiB `cudaMalloc`s, was killed at 9.1-11.1 GiB against a share of 8.7.
pub const POLL: Duration = Duration::from_millis(100);

/// What a run held when it was killed for holding more than its share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuMemoryOver {
    /// Bytes the driver counted for the run's processes.
    pub held: u64,
    /// Bytes a run that shares the GPU may hold.
    pub share: u64,
    /// The GPU's memory.
    pub total: u64,
}

impl GpuMemoryOver {
    /// "killed: it held 9.7 GiB of the GPU's 139.8 GiB while other runs shared it, ...".
    pub fn describe(&self) -> String {
        let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
        format!(
            "killed: it held {:.1} GiB of the GPU's {:.1} GiB while other runs shared it, over a shared run's {:.1} GiB (the GPU's memory shared evenly by the runs at once; CUDABUGS_SANITIZER_JOBS sets how many)",
            gib(self.held),
            gib(self.total),
            gib(self.share)
        )
    }
}

/// The bytes of GPU memory the driver counts for `pids` (None: not known here).
pub type HeldBy = dyn Fn(&[i32]) -> Option<u64> + Send + Sync;

/// A run held to a share of the GPU's memory while it shares the GPU.
#[derive(Clone)]
pub struct GpuMemoryWatch {
    pub share: u64,
    /// The GPU's memory.
    pub total: u64,
    held_by: Arc<HeldBy>,
}

impl std::fmt::Debug for GpuMemoryWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuMemoryWatch")
            .field("share", &self.share)
            .finish_non_exhaustive()
    }
}

impl GpuMemoryWatch {
    /// `share` bytes of a GPU of `total`, read from this machine's driver; None where NVML
    /// cannot be read.
    pub fn from_driver(share: u64, total: u64) -> Option<GpuMemoryWatch> {
        nvml()?;
        Some(GpuMemoryWatch {
            share,
            total,
            held_by: Arc::new(|pids| nvml().map(|n| n.held_by(pids))),
        })
    }

    /// A watch that reads `held_by` instead of the driver (the runner's tests).
    pub fn with_source(share: u64, total: u64, held_by: Arc<HeldBy>) -> GpuMemoryWatch {
        GpuMemoryWatch {
            share,
            total,
            held_by,
        }
    }

    /// What `pids` hold, where it is over the share.
    pub fn over(&self, pids: &[i32]) -> Option<GpuMemoryOver> {
        let held = (self.held_by)(pids)?;
        (held > self.share).then_some(GpuMemoryOver {
            held,
            share: self.share,
            total: self.total,
        })
    }
}

/// The per-process memory of every GPU, read at most once per `POLL` for all the runs watched.
struct Nvml {
    /// Kept loaded: the functions below point into it.
    _lib: libloading::Library,
    get_count: unsafe extern "C" fn(*mut u32) -> i32,
    get_handle: unsafe extern "C" fn(u32, *mut *mut std::ffi::c_void) -> i32,
    get_processes: unsafe extern "C" fn(*mut std::ffi::c_void, *mut u32, *mut ProcessInfo) -> i32,
    last: Mutex<(Option<Instant>, HashMap<u32, u64>)>,
}

/// `nvmlProcessInfo_t` (the `_v3` functions' layout).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ProcessInfo {
    pid: u32,
    used_gpu_memory: u64,
    gpu_instance_id: u32,
    compute_instance_id: u32,
}

const NVML_SUCCESS: i32 = 0;
const NVML_ERROR_INSUFFICIENT_SIZE: i32 = 7;
/// `NVML_VALUE_NOT_AVAILABLE`: the driver does not count this process's memory.
const NOT_AVAILABLE: u64 = u64::MAX;

fn nvml() -> Option<&'static Nvml> {
    static NVML: OnceLock<Option<Nvml>> = OnceLock::new();
    NVML.get_or_init(Nvml::open).as_ref()
}

impl Nvml {
    fn open() -> Option<Nvml> {
        // SAFETY: loading the driver's NVML runs its initialisers, which expect nothing of us; the
        // signatures are NVML's own (nvml.h, API version 12).
        unsafe {
            let lib = libloading::Library::new("libnvidia-ml.so.1").ok()?;
            let init: libloading::Symbol<unsafe extern "C" fn() -> i32> =
                lib.get(b"nvmlInit_v2\0").ok()?;
            if init() != NVML_SUCCESS {
                return None;
            }
            let get_count = *lib.get(b"nvmlDeviceGetCount_v2\0").ok()?;
            let get_handle = *lib.get(b"nvmlDeviceGetHandleByIndex_v2\0").ok()?;
            let get_processes = *lib.get(b"nvmlDeviceGetComputeRunningProcesses_v3\0").ok()?;
            Some(Nvml {
                _lib: lib,
                get_count,
                get_handle,
                get_processes,
                last: Mutex::new((None, HashMap::new())),
            })
        }
    }

    /// Bytes held by each process with a context on any GPU, summed over the GPUs.
    fn read(&self) -> HashMap<u32, u64> {
        let mut held = HashMap::new();
        let mut count = 0u32;
        // SAFETY: NVML writes at most `n` records into a buffer of `n`, and the count it needs
        // when that is too few; handles stay valid while NVML is initialised (never shut down).
        unsafe {
            if (self.get_count)(&mut count) != NVML_SUCCESS {
                return held;
            }
            for index in 0..count {
                let mut device = std::ptr::null_mut();
                if (self.get_handle)(index, &mut device) != NVML_SUCCESS {
                    continue;
                }
                let mut infos = vec![ProcessInfo::default(); 64];
                loop {
                    let mut n = infos.len() as u32;
                    match (self.get_processes)(device, &mut n, infos.as_mut_ptr()) {
                        NVML_SUCCESS => {
                            for p in &infos[..n as usize] {
                                if p.used_gpu_memory != NOT_AVAILABLE {
                                    *held.entry(p.pid).or_insert(0) += p.used_gpu_memory;
                                }
                            }
                            break;
                        }
                        NVML_ERROR_INSUFFICIENT_SIZE => {
                            infos.resize(n as usize + 16, ProcessInfo::default())
                        }
                        _ => break,
                    }
                }
            }
        }
        held
    }

    /// What `pids` hold now (a reading at most `POLL` old).
    fn held_by(&self, pids: &[i32]) -> u64 {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.0.is_none_or(|at| at.elapsed() >= POLL) {
            *last = (Some(Instant::now()), self.read());
        }
        pids.iter()
            .filter_map(|p| u32::try_from(*p).ok())
            .filter_map(|p| last.1.get(&p))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_over_its_share_is_told_apart_from_one_within_it() {
        let watch = GpuMemoryWatch::with_source(
            1 << 30,
            4 << 30,
            Arc::new(|pids: &[i32]| Some(pids.len() as u64 * (600 << 20))),
        );
        assert_eq!(watch.over(&[1]), None, "600 MiB of a 1 GiB share");
        let over = watch.over(&[1, 2]).expect("1200 MiB is over 1 GiB");
        assert_eq!(
            (over.held, over.share, over.total),
            (1200 << 20, 1 << 30, 4 << 30)
        );
        assert!(
            over.describe().starts_with("killed: it held 1.2 GiB of the GPU's 4.0 GiB while other runs shared it, over a shared run's 1.0 GiB"),
            "{}",
            over.describe()
        );
        let unknown = GpuMemoryWatch::with_source(1, 4, Arc::new(|_: &[i32]| None));
        assert_eq!(
            unknown.over(&[1]),
            None,
            "what the driver does not count stops nothing"
        );
    }

    #[test]
    fn nvml_where_there_is_no_driver_is_none_not_a_panic() {
        // Here (no NVIDIA driver) the watch cannot be made; on a GPU machine it reads the driver.
        if std::path::Path::new("/proc/driver/nvidia").exists() {
            assert!(GpuMemoryWatch::from_driver(1, 2).is_some());
        } else {
            assert!(GpuMemoryWatch::from_driver(1, 2).is_none());
        }
    }
}
