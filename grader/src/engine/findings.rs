//! What the sanitizers found, as a learner reads it: records of one shape folded into a finding,
//! placed at the learner's own line and in its marked region.

use serde::{Deserialize, Serialize};

use crate::exercise::manifest::{FindingKind, Tool};
use crate::exercise::regions::Region;
use crate::tools::sanitizer::{Record, SourceLocation};

/// Records of one shape (same kind, text and source line) folded together.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Finding {
    pub tool: Tool,
    pub kind: FindingKind,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// How many records had this shape.
    pub records: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hazards: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<[u32; 3]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<[u32; 3]>,
    /// Locations in the exercise's own source (all locations if none is there).
    pub locations: Vec<SourceLocation>,
    /// The marked region the finding points into, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// How many distinct (thread, block) pairs, and blocks, the folded records came from.
    #[serde(default)]
    pub threads: usize,
    #[serde(default)]
    pub blocks: usize,
}

/// Whether a finding lies in the marked region `region`: it points into it; or it is of a kind
/// whose records name no line at all (a device-heap leak), and names none; or it is racecheck's
/// deadlock report, which names the barrier's code in CUDA's headers, not the learner's wait (on an
/// H100: `barrier_block_scope.h:192` for 30-mbarrier-count's `bar.wait`): the hang names the region.
pub fn in_region(f: &Finding, region: &str) -> bool {
    f.region.as_deref() == Some(region)
        || (!f.kind.has_location() && f.locations.is_empty())
        || (f.kind == FindingKind::Deadlock
            && f.region.is_none()
            && f.locations.iter().all(|l| !l.path.ends_with(".cu")))
}

/// Fold records into findings, keeping only locations in `source` where there are any.
pub fn findings(records: &[Record], source: &std::path::Path, regions: &[Region]) -> Vec<Finding> {
    findings_in(records, &[source.to_path_buf()], regions)
}

/// Fold records into findings, keeping only locations in the user's `sources` where there are any:
/// a record inside a system header (sm_30_intrinsics.hpp, say) is told at the first frame of the
/// user's own code. Each finding counts the distinct threads and blocks it was seen in.
pub fn findings_in(
    records: &[Record],
    sources: &[std::path::PathBuf],
    regions: &[Region],
) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    let mut seen: Vec<std::collections::BTreeSet<([u32; 3], [u32; 3])>> = Vec::new();
    for r in records {
        // Host frames (the launch of a faulting kernel, the call behind a leak or a failed API
        // call) come after the device locations.
        let mine: Vec<SourceLocation> = sources
            .iter()
            .flat_map(|s| r.locations_in(s).cloned().collect::<Vec<_>>())
            .collect();
        let locations = if mine.is_empty() {
            r.locations.clone()
        } else {
            mine.clone()
        };
        // A record is placed by its device locations where it has any, by its host frames where
        // it has none.
        let on_device = mine.iter().any(|l| l.role != "host");
        let region = mine
            .iter()
            .filter(|l| !on_device || l.role != "host")
            .find_map(|l| regions.iter().find(|g| g.contains(l.line as usize)))
            .map(|g| g.name.clone());
        let key_line = locations.first().map(|l| l.line);
        let who = (r.thread.unwrap_or_default(), r.block.unwrap_or_default());
        if let Some(i) = out.iter().position(|f| {
            f.kind == r.kind && f.text == r.text && f.locations.first().map(|l| l.line) == key_line
        }) {
            out[i].records += 1;
            seen[i].insert(who);
            out[i].threads = seen[i].len();
            out[i].blocks = seen[i]
                .iter()
                .map(|(_, b)| *b)
                .collect::<std::collections::BTreeSet<_>>()
                .len();
            continue;
        }
        seen.push([who].into());
        out.push(Finding {
            tool: r.tool,
            kind: r.kind,
            text: r.text.clone(),
            level: r.level.clone(),
            records: 1,
            hazards: r.count,
            thread: r.thread,
            block: r.block,
            locations,
            region,
            threads: 1,
            blocks: 1,
        });
    }
    out
}
