//! What the timed runs saw of a version's kernels, for the anti-cheat rules: ncu's launches and
//! counters, or the driver's records of the plain calls where it times them.

use std::collections::BTreeSet;

use crate::engine::evidence::Timed;
use crate::engine::plan::Timer;
use crate::tools::driver::{base_name, Driver};
use crate::tools::ncu::{self, Measured};

/// What ncu saw of one version's timed runs, for the anti-cheat rules.
#[derive(Debug, Clone, Default)]
pub struct Audit {
    pub kernels: BTreeSet<String>,
    pub named_launched: bool,
    /// Per run of the bench, summed over the named kernels.
    pub dram_read: Option<f64>,
    pub instructions: Option<f64>,
    /// The slowest over the fastest timed call of the named kernels; None where the launches do not
    /// split evenly into the calls.
    pub spread: Option<f64>,
}

pub fn audit(m: &Measured, named: &[String], repeat: u32) -> Audit {
    let kernels: BTreeSet<String> = m.launches.iter().map(|l| l.kernel.clone()).collect();
    let text = m
        .csv()
        .and_then(|p| crate::untrusted::read_text(p).ok())
        .unwrap_or_default();
    let launches = ncu::parse_metrics(&text).unwrap_or_default();
    let mine: Vec<_> = launches
        .iter()
        .filter(|l| named.contains(&l.kernel))
        .collect();
    let sum = |k: &str| -> Option<f64> {
        let v: Vec<f64> = mine
            .iter()
            .filter_map(|l| l.metrics.get(k).copied())
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / repeat.max(1) as f64)
    };
    Audit {
        named_launched: kernels.iter().any(|k| named.contains(k)),
        kernels,
        dram_read: sum("dram__bytes_read.sum"),
        instructions: sum("smsp__inst_executed.sum"),
        spread: ncu::repeat_spread(&m.launches, named, repeat),
    }
}

/// What the driver saw of one version's plain judged calls (`judged` of them; the first left out
/// where there are more, as the clock leaves it), for the anti-cheat rules: the kernels that ran and
/// how evenly the named ones split into the calls. The counters are ncu's alone: none here.
pub fn driver_audit(d: &Driver, named: &[String], judged: usize) -> Audit {
    let calls: Vec<_> = d.calls.iter().take(judged).collect();
    let kernels: BTreeSet<String> = calls
        .iter()
        .flat_map(|c| &c.work)
        .filter(|w| w.kind == crate::tools::timeline::OpKind::Kernel)
        .map(|w| base_name(&w.name).to_string())
        .collect();
    let rest = if calls.len() > 1 {
        &calls[1..]
    } else {
        &calls[..]
    };
    let times: Vec<f64> = rest.iter().map(|c| c.kernel_ns(named)).collect();
    let spread = (times.len() == judged.saturating_sub(1).max(1) && times.iter().all(|&t| t > 0.0))
        .then(|| {
            times.iter().copied().fold(0.0, f64::max)
                / times.iter().copied().fold(f64::MAX, f64::min)
        });
    Audit {
        named_launched: kernels.iter().any(|k| named.contains(k)),
        kernels,
        dram_read: None,
        instructions: None,
        spread,
    }
}

/// One version's audit, from what measured it: ncu's launches and counters, or the driver's
/// records of its plain calls.
pub(super) fn version_audit(t: &Timed, timer: Timer, named: &[String], repeat: u32) -> Audit {
    match (timer, t.measured, t.driver) {
        (Timer::Driver, _, Some(d)) => {
            driver_audit(d, named, t.call.map_or(0, |c| c.calls_ns.len()))
        }
        (Timer::Driver, _, None) | (_, None, _) => Audit::default(),
        (_, Some(m), _) => audit(m, named, repeat),
    }
}
