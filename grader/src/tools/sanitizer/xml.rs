//! Reading what compute-sanitizer saved (`--xml --save`): the XML's shape, the kind of each record
//! and the source locations it names.

use serde::Deserialize;

use super::{Record, SourceLocation};
use crate::exercise::manifest::{FindingKind, Tool};

// ---- The XML, as compute-sanitizer 2025.3 writes it (see tests/fixtures). All fields optional: the
// shape differs per tool and per record kind.

#[derive(Debug, Deserialize, Default)]
struct RawOutput {
    #[serde(rename = "record", default)]
    records: Vec<RawRecord>,
}

#[derive(Debug, Deserialize, Default)]
struct RawRecord {
    kind: Option<String>,
    level: Option<String>,
    who: Option<RawWho>,
    what: Option<RawWhat>,
    #[serde(rename = "where")]
    location: Option<RawWhere>,
    #[serde(rename = "deviceStack")]
    device_stack: Option<RawStack>,
    /// Where the host was when the record's event happened (kernel launch, allocation, API call).
    #[serde(rename = "hostStack")]
    host_stack: Option<RawStack>,
    /// A stream-ordered race: the launch or copy that used the memory, and the allocation or free
    /// it raced with (memcheck --track-stream-ordered-races on an H100).
    #[serde(rename = "hostAccessStack")]
    host_access_stack: Option<RawStack>,
    #[serde(rename = "hostMemOpStack")]
    host_mem_op_stack: Option<RawStack>,
}

#[derive(Debug, Deserialize, Default)]
struct RawWho {
    #[serde(rename = "threadIdx")]
    thread: Option<RawDim>,
    #[serde(rename = "blockIdx")]
    block: Option<RawDim>,
}

#[derive(Debug, Deserialize, Default, Clone, Copy)]
struct RawDim {
    x: u32,
    y: u32,
    z: u32,
}

#[derive(Debug, Deserialize, Default)]
struct RawWhat {
    text: Option<String>,
    /// synccheck puts the error class here ("Divergent thread(s) in block"), `text` is "Barrier error".
    #[serde(rename = "type")]
    error_type: Option<String>,
    space: Option<String>,
    direction: Option<String>,
    error: Option<String>,
    /// A hardware exception instead of an access record, e.g. "Illegal instruction".
    exception: Option<String>,
    /// Racecheck's analysis records: one access on each side, or several (27-async-copy and
    /// 28-cluster-dsmem on an H100 gave records with more than one `destination`).
    #[serde(default)]
    source: Vec<RawAccess>,
    #[serde(default)]
    destination: Vec<RawAccess>,
}

#[derive(Debug, Deserialize, Default)]
struct RawAccess {
    direction: Option<String>,
    #[serde(rename = "where")]
    location: Option<RawWhere>,
    count: Option<u64>,
}

#[derive(Debug, Deserialize, Default, Clone)]
struct RawWhere {
    func: Option<String>,
    path: Option<String>,
    line: Option<u32>,
}

#[derive(Debug, Deserialize, Default)]
struct RawStack {
    #[serde(rename = "frame", default)]
    frames: Vec<RawWhere>,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot read compute-sanitizer XML: {0}")]
pub struct XmlError(String);

fn dim(d: Option<RawDim>) -> Option<[u32; 3]> {
    d.map(|d| [d.x, d.y, d.z])
}

fn location(w: &RawWhere, role: &str) -> Option<SourceLocation> {
    Some(SourceLocation {
        path: w.path.clone()?,
        line: w.line?,
        function: w.func.clone(),
        role: role.to_string(),
    })
}

/// What the option-enabled modes write, as compute-sanitizer 2025.3.1 wrote it on an H100
/// (`book/gpu-runs/2026-11-24-catalog/keep.tgz`), matched case-insensitively against the record's
/// text (with its `type`), kind, error, exception and the function it points at:
/// - memcheck: "Malloc/Free Error encountered: Device-side double free" (kind Syscall);
///   "Leaked 4 bytes" with type `deviceheap` (a device-heap leak, no location; a host leak's type
///   is `generic`); kind "Stream-ordered race", "Use-after-free race" (located by the host stacks
///   of the access and of the free); kind StackOverflow, "Stack overflow"; a bulk copy past the
///   end is an ordinary "Invalid __global__ read of size 16384 bytes is out of bounds", told apart
///   by the function it points at, `cp_async_bulk`.
/// - initcheck: kind UnusedMemory, "Unused memory in allocation 0x...".
/// - racecheck: an ordinary "Race condition" analysis record one of whose accesses is the
///   `cp_async` of cuda_pipeline_helpers.h (27-async-copy: a read of the tile against the async
///   copy's writes, two `destination`s); a cluster's race between blocks (28) is a plain race.
/// - racecheck, printed ("Deadlock detected in Cuda::barrier wait called by threads ..."; racecheck
///   was killed at the hang's limit before it wrote its XML, so the printed lines are the record).
///
/// Not seen yet: "Invalid pointer to free" and "heap corruption" (the manual's other heap errors),
/// "(invalid memcpy_async synchronization)" (hazard mode) and the cluster entry/exit records
/// ("might not have entered yet", "might have already exited"): the manual's words.
const MODE_PATTERNS: &[(Tool, &str, FindingKind)] = &[
    (Tool::Memcheck, "malloc/free error", FindingKind::HeapError),
    (Tool::Memcheck, "double free", FindingKind::HeapError),
    (
        Tool::Memcheck,
        "invalid pointer to free",
        FindingKind::HeapError,
    ),
    (Tool::Memcheck, "heap corruption", FindingKind::HeapError),
    (Tool::Memcheck, ": deviceheap", FindingKind::HeapLeak),
    (
        Tool::Memcheck,
        "stream-ordered race",
        FindingKind::StreamOrderedRace,
    ),
    (
        Tool::Memcheck,
        "before allocation is available",
        FindingKind::StreamOrderedRace,
    ),
    (Tool::Memcheck, "cp_async_bulk", FindingKind::BulkCopy),
    (Tool::Memcheck, "stack overflow", FindingKind::StackOverflow),
    (Tool::Racecheck, "deadlock", FindingKind::Deadlock),
    (Tool::Racecheck, "cp_async", FindingKind::AsyncCopyRace),
    (Tool::Racecheck, "memcpy_async", FindingKind::AsyncCopyRace),
    (
        Tool::Racecheck,
        "might not have entered yet",
        FindingKind::SharedRace,
    ),
    (
        Tool::Racecheck,
        "might have already exited",
        FindingKind::SharedRace,
    ),
    (Tool::Racecheck, "cp.async", FindingKind::AsyncCopyRace),
    (Tool::Initcheck, "unused memory", FindingKind::UnusedMemory),
];

/// The kind a record of one of the option-enabled modes has, by `MODE_PATTERNS`.
fn mode_kind(tool: Tool, raw: &RawRecord, text: &str) -> Option<FindingKind> {
    let what = raw.what.as_ref();
    // The functions the record points at: a bulk copy's `cp_async_bulk`, the `cp_async` that wrote
    // one side of a race.
    let accesses = what
        .into_iter()
        .flat_map(|w| w.source.iter().chain(&w.destination))
        .filter_map(|a| a.location.as_ref());
    let funcs = raw
        .location
        .iter()
        .chain(accesses)
        .filter_map(|w| w.func.as_deref());
    let words = [
        Some(text),
        raw.kind.as_deref(),
        what.and_then(|w| w.error.as_deref()),
        what.and_then(|w| w.exception.as_deref()),
    ]
    .into_iter()
    .flatten()
    .chain(funcs)
    .collect::<Vec<_>>()
    .join(" ")
    .to_lowercase();
    MODE_PATTERNS
        .iter()
        .find(|(t, pattern, _)| *t == tool && words.contains(pattern))
        .map(|(_, _, kind)| *kind)
}

/// Which kind of record this is. compute-sanitizer's XML has no stable code for the error class, so
/// the kind comes from the option-enabled modes' words (`MODE_PATTERNS`), then the structured
/// fields (`error`, `kind`), then the record text.
fn classify(tool: Tool, raw: &RawRecord) -> FindingKind {
    let what = raw.what.as_ref();
    let text = &record_text(raw);
    let kind = raw.kind.as_deref().unwrap_or("");
    if let Some(found) = mode_kind(tool, raw, text) {
        return found;
    }
    match tool {
        Tool::Racecheck => {
            if what.is_some_and(|w| !w.source.is_empty() && !w.destination.is_empty())
                || text.contains("Race")
                || text.contains("hazard")
            {
                FindingKind::SharedRace
            } else {
                FindingKind::Other
            }
        }
        Tool::Memcheck => {
            if what.and_then(|w| w.error.as_deref()) == Some("out of bounds")
                || text.contains("out of bounds")
            {
                FindingKind::OutOfBounds
            } else if text.contains("misaligned") {
                FindingKind::Misaligned
            } else if kind.contains("Leak") || text.contains("leak") || text.contains("Leaked") {
                FindingKind::Leak
            } else if text.starts_with("Program hit") {
                FindingKind::ApiError
            } else if what.is_some_and(|w| w.exception.is_some()) {
                FindingKind::DeviceException
            } else {
                FindingKind::Other
            }
        }
        Tool::Initcheck => {
            if text.starts_with("Uninitialized") {
                FindingKind::UninitializedRead
            } else if kind.contains("ApiError")
                || text.starts_with("Host API")
                || text.contains("cudaMemcpy")
            {
                FindingKind::UninitializedCopy
            } else {
                FindingKind::Other
            }
        }
        Tool::Synccheck => {
            if text.contains("Divergent thread") {
                FindingKind::DivergentBarrier
            } else if text.contains("Invalid arguments") {
                FindingKind::InvalidBarrier
            } else {
                FindingKind::Other
            }
        }
    }
}

/// The record's words: `text`, with synccheck's `type` after it.
fn record_text(raw: &RawRecord) -> String {
    match &raw.what {
        Some(w) => match (&w.text, &w.error_type) {
            (Some(t), Some(ty)) => format!("{t}: {ty}"),
            (Some(t), None) => t.clone(),
            (None, _) => [
                w.exception.as_deref(),
                w.space.as_deref(),
                w.direction.as_deref(),
                w.error.as_deref(),
                w.error_type.as_deref(),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" "),
        },
        None => raw.kind.clone().unwrap_or_default(),
    }
}

/// Parse the XML that `--xml --save` wrote.
pub fn parse(tool: Tool, xml: &str) -> Result<Vec<Record>, XmlError> {
    if xml.trim().is_empty() {
        return Ok(Vec::new());
    }
    let raw: RawOutput = quick_xml::de::from_str(xml).map_err(|e| XmlError(e.to_string()))?;
    Ok(raw
        .records
        .into_iter()
        .map(|r| {
            let kind = classify(tool, &r);
            let what = r.what.as_ref();
            let locations = locations(&r);
            let text = record_text(&r);
            let count = what.and_then(|w| w.destination.iter().find_map(|d| d.count));
            Record {
                tool,
                kind,
                text,
                level: r.level.clone(),
                thread: dim(r.who.as_ref().and_then(|w| w.thread)),
                block: dim(r.who.as_ref().and_then(|w| w.block)),
                count,
                locations,
            }
        })
        .collect())
}

/// Every source location the record names, most specific first (see `Record::locations`): the
/// access, a race's accesses by their direction, the device frames, then the host frames.
fn locations(r: &RawRecord) -> Vec<SourceLocation> {
    let what = r.what.as_ref();
    let mut locations = Vec::new();
    if let Some(w) = &r.location {
        locations.extend(location(w, "access"));
    }
    let accesses = what
        .map(|w| {
            w.source
                .iter()
                .map(|a| (a, "source"))
                .chain(w.destination.iter().map(|a| (a, "destination")))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    for (a, role) in accesses {
        let role = a
            .direction
            .as_deref()
            .map(str::to_lowercase)
            .unwrap_or_else(|| role.to_string());
        locations.extend(a.location.as_ref().and_then(|w| location(w, &role)));
    }
    if let Some(stack) = &r.device_stack {
        locations.extend(stack.frames.iter().filter_map(|f| location(f, "frame")));
    }
    for host in [&r.host_stack, &r.host_access_stack, &r.host_mem_op_stack]
        .into_iter()
        .flatten()
    {
        locations.extend(host_locations(host.frames.as_slice()));
    }
    locations
}

/// A host stack's frames that carry a line, role "host".
fn host_locations(host: &[RawWhere]) -> impl Iterator<Item = SourceLocation> + '_ {
    // The frame after a `__device_stub__` is the kernel's host stub, which sits at the
    // kernel's definition: it says nothing the launch line does not.
    let stubs: Vec<bool> = host
        .iter()
        .map(|f| {
            f.func
                .as_deref()
                .is_some_and(|n| n.starts_with("__device_stub__"))
        })
        .collect();
    host.iter()
        .enumerate()
        .filter(move |(i, _)| !(*i > 0 && stubs[i - 1]))
        .filter_map(|(_, f)| location(f, "host"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const RACE: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<ComputeSanitizerOutput>
  <record>
    <kind>Analysis</kind>
    <level>Error</level>
    <what>
      <text>Race condition</text>
      <source><direction>Write</direction><where><func>blockSum</func><path>/p/race.cu</path><line>6</line><pc>0x5e0</pc></where></source>
      <destination><direction>Read</direction><where><func>blockSum</func><path>/p/race.cu</path><line>9</line><pc>0xb90</pc></where><count>131072</count></destination>
    </what>
  </record>
</ComputeSanitizerOutput>"#;

    #[test]
    fn racecheck_analysis_records_carry_both_accesses() {
        let r = parse(Tool::Racecheck, RACE).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].kind, FindingKind::SharedRace);
        assert_eq!(r[0].count, Some(131072));
        let lines: Vec<(u32, &str)> = r[0]
            .locations
            .iter()
            .map(|l| (l.line, l.role.as_str()))
            .collect();
        assert_eq!(lines, vec![(6, "write"), (9, "read")]);
        assert_eq!(
            r[0].locations_in(Path::new("/elsewhere/race.cu")).count(),
            2
        );
        assert_eq!(r[0].locations_in(Path::new("/p/other.cu")).count(), 0);
    }

    /// One record with the given `what`, in the shape 2025.3 writes (see tests/fixtures).
    fn one(tool: Tool, what: &str) -> Record {
        let xml = format!("<ComputeSanitizerOutput><record><kind>Error</kind><level>Error</level><what>{what}</what><where><func>k</func><path>/p/k.cu</path><line>7</line></where></record></ComputeSanitizerOutput>");
        parse(tool, &xml).unwrap().remove(0)
    }

    #[test]
    fn the_option_enabled_modes_are_told_apart_by_the_manuals_words() {
        // As the H100 wrote them (MODE_PATTERNS), and the manual's words for the modes not seen yet.
        for (tool, what, kind) in [
            (Tool::Memcheck, "<text>Malloc/Free Error encountered: Device-side double free</text>", FindingKind::HeapError),
            (Tool::Memcheck, "<text>Malloc/Free error encountered : Invalid pointer to free</text>", FindingKind::HeapError),
            (Tool::Memcheck, "<text>Invalid __global__ read of size 16384 bytes is out of bounds</text><error>out of bounds</error>", FindingKind::OutOfBounds),
            (Tool::Memcheck, "<text>Invalid __global__ read of size 4 bytes</text><error>Address 0x7f00 is used before allocation is available</error>", FindingKind::StreamOrderedRace),
            (Tool::Racecheck, "<text>Deadlock detected in Cuda::barrier wait called by threads starting at (0,0,0) in block (0,0,0)</text>", FindingKind::Deadlock),
            (Tool::Racecheck, "<text>Race reported (invalid memcpy_async synchronization)</text>", FindingKind::AsyncCopyRace),
            (Tool::Initcheck, "<text>Unused memory in allocation 0x7f9b368c3a00</text>", FindingKind::UnusedMemory),
            (Tool::Memcheck, "<text>Stack overflow</text>", FindingKind::StackOverflow),
            (Tool::Racecheck, "<text>Potential invalid __shared__ read of size 4 bytes</text><error>Address 0x1000400 is located in a block that might have already exited</error>", FindingKind::SharedRace),
        ] {
            let r = one(tool, what);
            assert_eq!((r.kind, r.locations[0].short()), (kind, "k.cu:7".to_string()), "{what}");
            assert_eq!(kind.tool(), Some(tool), "each kind is its tool's");
        }
        // The words belong to their tool: the same text from another tool is not that kind, and the
        // records the modes do not touch keep their kinds.
        assert_eq!(
            one(Tool::Synccheck, "<text>Deadlock</text>").kind,
            FindingKind::Other
        );
        assert_eq!(
            one(Tool::Memcheck, "<text>Leaked 4 bytes at 0x7f00</text>").kind,
            FindingKind::Leak
        );
        assert_eq!(
            one(
                Tool::Memcheck,
                "<text>Invalid __global__ write of size 4 bytes</text><error>out of bounds</error>"
            )
            .kind,
            FindingKind::OutOfBounds
        );
    }

    #[test]
    fn empty_output_means_no_records_and_garbage_is_an_error() {
        assert!(parse(Tool::Memcheck, "").unwrap().is_empty());
        assert!(parse(
            Tool::Memcheck,
            "<ComputeSanitizerOutput></ComputeSanitizerOutput>"
        )
        .unwrap()
        .is_empty());
        assert!(parse(Tool::Memcheck, "<ComputeSanitizerOutput><record>").is_err());
    }
}
