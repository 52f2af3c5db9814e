//! How a GPU stage's run goes: beside other runs, held to a share of the GPU's memory and to their
//! pace, or alone.

use std::sync::Arc;

use crate::engine::pace::Pace;
use crate::tools::gpu_memory::GpuMemoryWatch;

/// How a GPU stage's run goes: beside other runs (held to a share of the GPU's memory) or alone,
/// and for a tool run again after it stalled, its shorter limit.
#[derive(Debug, Clone)]
pub struct RunTerms {
    /// The limit of a stalled tool run again alone (none: the configured one).
    pub after_stall: Option<std::time::Duration>,
    /// Beside other runs: the GPU memory it may hold, read from the driver.
    pub gpu_memory: Option<GpuMemoryWatch>,
    /// Beside other runs: the pace their tool runs set, past which a tool run is cut.
    pub pace: Option<Arc<Pace>>,
}

impl RunTerms {
    /// Beside other runs, held to `gpu_memory` where the driver's count can be read, and to
    /// `pace`.
    pub fn beside(gpu_memory: Option<GpuMemoryWatch>, pace: Arc<Pace>) -> RunTerms {
        RunTerms {
            after_stall: None,
            gpu_memory,
            pace: Some(pace),
        }
    }

    /// Alone on the GPU (the plans that run one stage at a time, the runs again alone).
    pub fn alone(after_stall: Option<std::time::Duration>) -> RunTerms {
        RunTerms {
            after_stall,
            gpu_memory: None,
            pace: None,
        }
    }
}
