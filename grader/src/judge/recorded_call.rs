//! The call a call timing recorded after its judged ones, as the performance metrics read it: its
//! launches, copies, overlap and waits counted from what the driver ran (CUPTI's records, harness/
//! driver.cuh) where the harness could record them, else from the timeline's wrappers, and said
//! which; a copy earns overlap only for the bytes the reference fix copies.

use serde::{Deserialize, Serialize};

use crate::engine::stages::Output;
use crate::exercise::metric::{timeline_keys, Counters};
use crate::tools::timeline;

/// The call a call timing recorded after its judged ones, with its figures added to the counters
/// the metrics read: counted from what the driver ran (CUPTI's records of that call) where the
/// harness could record them, else from the timeline's wrappers, which see only the runtime calls
/// they wrap (`cudaLaunchKernelEx`, the driver API and graph nodes pass them by). `needed`: the
/// bytes the reference fix copies, beyond which a copy earns no overlap. Returns the call and who
/// counted it.
pub(super) fn recorded(
    o: Option<&Output>,
    c: &mut Counters,
    needed: Option<f64>,
) -> Option<(timeline::Call, Counted)> {
    let Some(Output::Called {
        timeline: Some(t),
        driver,
        ..
    }) = o
    else {
        return None;
    };
    let call = t.shown()?.clone();
    let traced = match driver {
        Some(Ok(d)) => d
            .call(call.index)
            .ok_or_else(|| format!("CUPTI recorded no call {} (the recorded one)", call.index)),
        Some(Err(why)) => Err(why.to_string()),
        None => Err("the toolkit has no CUPTI".to_string()),
    };
    let wrappers = call.stats();
    let (s, counted) = match traced {
        Ok(d) => (d.stats(needed), Counted::Driver),
        Err(why) => (wrappers, Counted::Wrappers(why)),
    };
    // The kernels' share is the picture's: the timeline's kernels over the recorded call's own wall
    // (CUPTI's work at each launch lengthens that call, not the kernels, and the lessons read the
    // share as the timeline shows it).
    for (k, v) in [
        (timeline_keys::LAUNCHES, s.launches),
        (timeline_keys::SYNCS, s.syncs),
        (timeline_keys::CALL_NS, call.wall_ns),
        (timeline_keys::KERNEL_NS, wrappers.kernel_ns),
        (timeline_keys::COPY_BYTES, s.copy_bytes),
        (timeline_keys::COPY_NS, s.copy_ns),
        (timeline_keys::OVERLAP_NS, s.overlap_ns),
    ] {
        c.raw.insert(k.to_string(), v);
    }
    Some((call, counted))
}

/// Who counted a version's launches, copies and overlap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Counted {
    /// CUPTI's records of what the GPU ran.
    Driver,
    /// The harness's wrappers of runtime calls, because CUPTI's records were not there (why).
    Wrappers(String),
}

/// The bytes the reference fix's recorded call copied between host and device, as the driver saw
/// them: what a version's copies may overlap with kernels and count for it.
pub(super) fn reference_copy_bytes(reference_call: Option<&Output>) -> Option<f64> {
    let Some(Output::Called {
        timeline: Some(t),
        driver: Some(Ok(d)),
        ..
    }) = reference_call
    else {
        return None;
    };
    Some(d.call(t.shown()?.index)?.stats(None).copy_bytes)
}
