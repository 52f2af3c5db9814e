//! The performance track's counters from ncu's CSV: each version's median time and raw counters per
//! run of the bench (the metrics themselves are `exercise::metric`'s).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::exercise::metric::*;

/// The kernel time, in every ncu run.
pub const TIME: &str = "gpu__time_duration.sum";

/// One launch's metrics, by name, as `ncu::parse_metrics` reads them from ncu's CSV.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchMetrics {
    pub kernel: String,
    pub grid: String,
    pub block: String,
    pub metrics: BTreeMap<String, f64>,
}

/// One version's counters from ncu's launches: the launches of `kernels` split into `repeat` equal
/// runs of the bench; the time is the median run's, the raw counters the per-run aggregate (sums
/// averaged over the runs, other counters weighted by launch time). None where the launches do not
/// split into the repeats or carry no time.
pub fn aggregate(launches: &[LaunchMetrics], kernels: &[String], repeat: u32) -> Option<Counters> {
    let mine: Vec<&LaunchMetrics> = launches
        .iter()
        .filter(|l| kernels.is_empty() || kernels.contains(&l.kernel))
        .collect();
    let repeat = repeat.max(1) as usize;
    if mine.is_empty() || !mine.len().is_multiple_of(repeat) {
        return None;
    }
    let time = |l: &LaunchMetrics| l.metrics.get(TIME).copied();
    let mut per_run: Vec<f64> = mine
        .chunks(mine.len() / repeat)
        .map(|run| run.iter().map(|l| time(l).unwrap_or(0.0)).sum())
        .collect();
    per_run.sort_by(f64::total_cmp);
    let nanoseconds = if repeat % 2 == 1 {
        per_run[repeat / 2]
    } else {
        (per_run[repeat / 2 - 1] + per_run[repeat / 2]) / 2.0
    };
    if nanoseconds <= 0.0 {
        return None;
    }
    let total_time: f64 = mine.iter().filter_map(|l| time(l)).sum();
    let mut raw: BTreeMap<String, f64> = BTreeMap::new();
    let names: std::collections::BTreeSet<&String> = mine
        .iter()
        .flat_map(|l| l.metrics.keys())
        .filter(|n| n.as_str() != TIME)
        .collect();
    for name in names {
        let value = if name.ends_with(".sum") {
            mine.iter().filter_map(|l| l.metrics.get(name)).sum::<f64>() / repeat as f64
        } else if total_time > 0.0 {
            mine.iter()
                .filter_map(|l| Some(l.metrics.get(name)? * time(l)?))
                .sum::<f64>()
                / total_time
        } else {
            continue;
        };
        raw.insert(name.clone(), value);
    }
    Some(Counters { nanoseconds, raw })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(kernel: &str, pairs: &[(&str, f64)]) -> LaunchMetrics {
        LaunchMetrics {
            kernel: kernel.into(),
            grid: String::new(),
            block: String::new(),
            metrics: pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn counters_add_sums_weight_ratios_and_take_the_median_run() {
        let t = TIME;
        let launches = [
            launch(
                "k",
                &[
                    (t, 100.0),
                    ("dram__bytes_read.sum", 10.0),
                    ("sm__warps_active.avg.pct_of_peak_sustained_active", 50.0),
                ],
            ),
            launch("other", &[(t, 999.0)]),
            launch(
                "k",
                &[
                    (t, 300.0),
                    ("dram__bytes_read.sum", 10.0),
                    ("sm__warps_active.avg.pct_of_peak_sustained_active", 90.0),
                ],
            ),
            launch(
                "k",
                &[
                    (t, 200.0),
                    ("dram__bytes_read.sum", 10.0),
                    ("sm__warps_active.avg.pct_of_peak_sustained_active", 70.0),
                ],
            ),
        ];
        let c = aggregate(&launches, &["k".into()], 3).unwrap();
        assert_eq!(c.nanoseconds, 200.0, "the median of 100, 300, 200");
        assert_eq!(c.raw["dram__bytes_read.sum"], 10.0, "a sum per run");
        let weighted = (50.0 * 100.0 + 90.0 * 300.0 + 70.0 * 200.0) / 600.0;
        assert!(
            (c.raw["sm__warps_active.avg.pct_of_peak_sustained_active"] - weighted).abs() < 1e-9
        );
        assert!(
            aggregate(&launches, &["k".into()], 2).is_none(),
            "3 launches are not 2 runs"
        );
    }
}
