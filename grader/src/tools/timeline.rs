//! The harness's timeline of a call (`--timeline`, harness/timeline.cuh): each copy, memset,
//! launch, sync and allocation of the exercise, with the host's call and the GPU's interval. The
//! launch and copy metrics of the `clock = "call"` exercises are read from it, and the lessons draw
//! it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpKind {
    Kernel,
    Graph,
    H2d,
    D2h,
    D2d,
    H2h,
    Memset,
    Sync,
    Alloc,
    Free,
}

impl OpKind {
    fn parse(word: &str) -> Option<OpKind> {
        Some(match word {
            "kernel" => OpKind::Kernel,
            "graph" => OpKind::Graph,
            "h2d" => OpKind::H2d,
            "d2h" => OpKind::D2h,
            "d2d" => OpKind::D2d,
            "h2h" => OpKind::H2h,
            "memset" => OpKind::Memset,
            "sync" => OpKind::Sync,
            "alloc" => OpKind::Alloc,
            "free" => OpKind::Free,
            _ => return None,
        })
    }

    pub fn key(self) -> &'static str {
        match self {
            OpKind::Kernel => "kernel",
            OpKind::Graph => "graph",
            OpKind::H2d => "h2d",
            OpKind::D2h => "d2h",
            OpKind::D2d => "d2d",
            OpKind::H2h => "h2h",
            OpKind::Memset => "memset",
            OpKind::Sync => "sync",
            OpKind::Alloc => "alloc",
            OpKind::Free => "free",
        }
    }

    /// Work of the SMs: a kernel, or a graph (of kernels, as the exercises build them).
    pub fn computes(self) -> bool {
        matches!(self, OpKind::Kernel | OpKind::Graph)
    }

    /// A copy over PCIe.
    pub fn crosses(self) -> bool {
        matches!(self, OpKind::H2d | OpKind::D2h)
    }
}

/// One call of the runtime, from the start of the call (ns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Op {
    pub kind: OpKind,
    /// 0: the default stream; then 1, 2, ... in the order the call used them.
    pub stream: u32,
    pub host: (f64, f64),
    /// When its stream reached it and finished it; None for what only the host sees, and for
    /// work the harness's event pool had no room for. (Work queued while its stream was captured
    /// into a graph is not recorded: the graph's launch is.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

fn is_zero(b: &u64) -> bool {
    *b == 0
}

/// One call of the entry point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    pub index: u32,
    pub wall_ns: f64,
    pub ops: Vec<Op>,
    /// Operations beyond the harness's 4096 event pairs, recorded without their GPU interval.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u64,
}

/// What the metrics read from a call.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Stats {
    pub launches: f64,
    pub syncs: f64,
    /// Time some kernel ran (the union of the kernels' intervals).
    pub kernel_ns: f64,
    /// Time some copy over PCIe ran.
    pub copy_ns: f64,
    /// Time a copy and a kernel ran at once.
    pub overlap_ns: f64,
    pub copy_bytes: f64,
}

/// Sorted, merged intervals.
fn union(mut spans: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    spans.retain(|(a, b)| b > a);
    spans.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (a, b) in spans {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

fn length(spans: &[(f64, f64)]) -> f64 {
    spans.iter().map(|(a, b)| b - a).sum()
}

/// The length of the intersection of two merged interval lists.
fn shared(x: &[(f64, f64)], y: &[(f64, f64)]) -> f64 {
    let (mut i, mut j, mut total) = (0, 0, 0.0);
    while i < x.len() && j < y.len() {
        let (a, b) = (x[i].0.max(y[j].0), x[i].1.min(y[j].1));
        if b > a {
            total += b - a;
        }
        if x[i].1 < y[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

impl Call {
    pub fn stats(&self) -> Stats {
        let (kernel_ns, copy_ns, overlap_ns) =
            busy(self.ops.iter().filter_map(|o| Some((o.kind, o.gpu?))));
        Stats {
            launches: self.ops.iter().filter(|o| o.kind.computes()).count() as f64,
            syncs: self.ops.iter().filter(|o| o.kind == OpKind::Sync).count() as f64,
            kernel_ns,
            copy_ns,
            overlap_ns,
            copy_bytes: self
                .ops
                .iter()
                .filter(|o| o.kind.crosses())
                .map(|o| o.bytes as f64)
                .sum(),
        }
    }
}

/// From the GPU intervals of a call's work (the timeline's, or the driver's records): how long
/// some kernel ran, some copy over PCIe ran, and both at once.
pub(crate) fn busy(work: impl Iterator<Item = (OpKind, (f64, f64))>) -> (f64, f64, f64) {
    let (mut kernels, mut copies) = (Vec::new(), Vec::new());
    for (kind, span) in work {
        if kind.computes() {
            kernels.push(span);
        } else if kind.crosses() {
            copies.push(span);
        }
    }
    let (kernels, copies) = (union(kernels), union(copies));
    (length(&kernels), length(&copies), shared(&kernels, &copies))
}

/// Every call of one run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Timeline {
    pub calls: Vec<Call>,
    /// Every call's launches as the wrappers counted them (kernels and graphs), by call index,
    /// recorded or not: what the judged calls launched beside what the recorded one did.
    pub launched: std::collections::BTreeMap<u32, u64>,
}

/// Why a timeline file cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TimelineError {
    #[error("line {line}: `{text}`")]
    Unreadable { line: usize, text: String },
    #[error("no call recorded")]
    NoCall,
}

impl Timeline {
    /// The file the harness wrote; Err says which line it could not read.
    pub fn parse(text: &str) -> Result<Timeline, TimelineError> {
        let mut t = Timeline::default();
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let bad = || TimelineError::Unreadable {
                line: n + 1,
                text: line.chars().take(80).collect(),
            };
            let w: Vec<&str> = line.split_whitespace().collect();
            let num = |i: usize| w.get(i).and_then(|v| v.parse::<f64>().ok()).ok_or_else(bad);
            match w[0] {
                "call" if w.len() == 3 => t.calls.push(Call {
                    index: num(1)? as u32,
                    wall_ns: num(2)?,
                    ops: Vec::new(),
                    dropped: 0,
                }),
                "launched" if w.len() == 3 => {
                    t.launched.insert(num(1)? as u32, num(2)? as u64);
                }
                "dropped" if w.len() == 2 => {
                    t.calls.last_mut().ok_or_else(bad)?.dropped = num(1)? as u64
                }
                "op" if w.len() == 9 => {
                    let (g0, g1) = (num(5)?, num(6)?);
                    let op = Op {
                        kind: OpKind::parse(w[1]).ok_or_else(bad)?,
                        stream: num(2)? as u32,
                        host: (num(3)?, num(4)?),
                        gpu: (g0 >= 0.0 && g1 >= 0.0).then_some((g0, g1)),
                        bytes: num(7)? as u64,
                        name: if w[8] == "-" {
                            String::new()
                        } else {
                            w[8].to_string()
                        },
                    };
                    t.calls.last_mut().ok_or_else(bad)?.ops.push(op);
                }
                _ => return Err(bad()),
            }
        }
        if t.calls.is_empty() {
            return Err(TimelineError::NoCall);
        }
        Ok(t)
    }

    /// The call the metrics and the picture show: the last (the first loads the kernels).
    pub fn shown(&self) -> Option<&Call> {
        self.calls.last()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_with_copies_under_kernels() {
        // Two chunks in two streams: the second chunk's copy in runs beside the first's kernel.
        let text = "call 0 900000\nop h2d 1 0 10 0 100 1000 -\ncall 1 500000\n\
                    op alloc 0 0 5000 -1 -1 0 -\n\
                    op h2d 1 5000 5100 6000 16000 4096 -\n\
                    op kernel 1 5100 5200 16000 30000 0 map\n\
                    op h2d 2 5200 5300 16000 26000 4096 -\n\
                    op kernel 2 5300 5400 30000 44000 0 map\n\
                    op d2h 1 5400 5500 30000 40000 4096 -\n\
                    op sync 0 5500 45000 -1 -1 0 -\n";
        let t = Timeline::parse(text).unwrap();
        assert_eq!(t.calls.len(), 2);
        let call = t.shown().unwrap();
        assert_eq!(
            (
                call.index,
                call.ops.len(),
                call.ops[0].gpu,
                call.ops[2].name.as_str()
            ),
            (1, 7, None, "map")
        );
        let s = call.stats();
        assert_eq!((s.launches, s.syncs, s.copy_bytes), (2.0, 1.0, 12288.0));
        assert_eq!(s.kernel_ns, 28000.0, "16-30 and 30-44 us merge");
        assert_eq!(s.copy_ns, 30000.0, "6-26 and 30-40");
        assert_eq!(s.overlap_ns, 20000.0, "16-26 and 30-40 under the kernels");
    }

    #[test]
    fn what_it_cannot_read_is_named() {
        let why = |text: &str| Timeline::parse(text).unwrap_err().to_string();
        assert!(why("").contains("no call"));
        assert!(why("op kernel 0 1 2 3 4 0 k\n").contains("line 1"));
        assert!(why("call 0 5\nop teleport 0 1 2 3 4 0 -\n").contains("line 2"));
    }
}
