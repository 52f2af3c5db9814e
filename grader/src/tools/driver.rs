//! What the GPU ran in each served call, as CUPTI's activity records give it (`--driver`,
//! harness/driver.cuh): every kernel however it was launched (chevrons, `cudaLaunchKernelEx`, the
//! driver API, a graph's nodes), every copy and memset, every wait. The launch and copy metrics
//! are counted from these where they exist, not from the timeline's wrappers, which see only the
//! runtime calls they wrap; and each judged call's kernel time outside ncu is read here.

use serde::{Deserialize, Serialize};

use crate::tools::timeline::{busy, OpKind, Stats};

/// One piece of GPU work of a call, from the call's start (ns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Work {
    pub kind: OpKind,
    /// CUPTI's stream id.
    pub stream: u32,
    pub gpu: (f64, f64),
    #[serde(default)]
    pub bytes: u64,
    /// The runtime or driver call that queued it: a graph's nodes share their launch's.
    pub correlation: u32,
    /// The kernel's function name, demangled, without parameters; empty for copies.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// One served call: its GPU work and its waits.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DriverCall {
    /// The call's number, from 0 (the timeline's and the grader's clock's).
    pub index: u32,
    pub work: Vec<Work>,
    pub syncs: u32,
}

/// Every recorded call of one run, or why the harness recorded none.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Driver {
    pub calls: Vec<DriverCall>,
    /// Records CUPTI had no buffer for: the counts are then a floor.
    #[serde(default)]
    pub dropped: u64,
}

/// Why a driver file gives no records.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DriverError {
    /// The harness could not subscribe (no CUPTI in the toolkit, CUPTI refused, ...).
    #[error("CUPTI was unavailable to the harness: {0}")]
    Unavailable(String),
    #[error("line {line}: `{text}`")]
    Unreadable { line: usize, text: String },
}

impl Driver {
    /// The file the harness wrote (harness/driver.cuh's format).
    pub fn parse(text: &str) -> Result<Driver, DriverError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let bad = |n: usize, line: &str| DriverError::Unreadable {
            line: n + 1,
            text: line.chars().take(80).collect(),
        };
        match lines.next() {
            Some((_, "driver ok")) => {}
            Some((_, l)) if l.starts_with("driver unavailable") => {
                let why = l["driver unavailable".len()..].trim();
                return Err(DriverError::Unavailable(why.to_string()));
            }
            Some((n, l)) => return Err(bad(n, l)),
            None => return Err(bad(0, "")),
        }
        let mut d = Driver::default();
        for (n, line) in lines {
            let w: Vec<&str> = line.split_whitespace().collect();
            let num = |i: usize| {
                w.get(i)
                    .and_then(|v| v.parse::<f64>().ok())
                    .ok_or_else(|| bad(n, line))
            };
            match w[0] {
                "call" if w.len() == 2 => d.calls.push(DriverCall {
                    index: num(1)? as u32,
                    ..DriverCall::default()
                }),
                "gpu" if w.len() >= 8 => {
                    let kind = match w[1] {
                        "kernel" => OpKind::Kernel,
                        "h2d" => OpKind::H2d,
                        "d2h" => OpKind::D2h,
                        "d2d" => OpKind::D2d,
                        "h2h" => OpKind::H2h,
                        "memset" => OpKind::Memset,
                        _ => return Err(bad(n, line)),
                    };
                    // The name is the rest of the line: a demangled name may hold spaces.
                    let name = line.splitn(8, ' ').nth(7).unwrap_or("").trim();
                    let work = Work {
                        kind,
                        stream: num(2)? as u32,
                        gpu: (num(3)?, num(4)?),
                        bytes: num(5)? as u64,
                        correlation: num(6)? as u32,
                        name: if name == "-" {
                            String::new()
                        } else {
                            name.to_string()
                        },
                    };
                    d.calls
                        .last_mut()
                        .ok_or_else(|| bad(n, line))?
                        .work
                        .push(work);
                }
                "sync" if w.len() == 4 => {
                    d.calls.last_mut().ok_or_else(|| bad(n, line))?.syncs += 1
                }
                "dropped" if w.len() == 2 => d.dropped = num(1)? as u64,
                _ => return Err(bad(n, line)),
            }
        }
        Ok(d)
    }

    pub fn call(&self, index: u32) -> Option<&DriverCall> {
        self.calls.iter().find(|c| c.index == index)
    }

    /// The least time of the `kernels` in one call, over the calls after the first (the clock's
    /// own rule, `CallTimes::judged_ns`): the kernel time of the plain runs, to set beside ncu's.
    /// None where no call after the first ran one of them.
    pub fn judged_kernel_ns(&self, kernels: &[String], judged: usize) -> Option<f64> {
        let calls: Vec<&DriverCall> = self.calls.iter().take(judged).collect();
        let rest = if calls.len() > 1 {
            &calls[1..]
        } else {
            &calls[..]
        };
        rest.iter()
            .map(|c| c.kernel_ns(kernels))
            .filter(|&t| t > 0.0)
            .reduce(f64::min)
    }
}

/// A kernel's name as the manifest writes it: without a return type, namespaces or template
/// arguments (`void ns::sum<256>` -> `sum`).
pub fn base_name(name: &str) -> &str {
    let mut n = name.trim();
    if n.ends_with('>') {
        let mut depth = 0;
        for (i, c) in n.char_indices().rev() {
            match c {
                '>' => depth += 1,
                '<' => {
                    depth -= 1;
                    if depth == 0 {
                        n = &n[..i];
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    let n = n.rsplit(' ').next().unwrap_or(n);
    n.rsplit("::").next().unwrap_or(n)
}

impl DriverCall {
    /// The time during which some kernel named in `kernels` (any kernel where it is empty) ran:
    /// kernels that run side by side in streams count once (ncu runs them one at a time, each
    /// alone, and adds their times; the same work shared out at once takes each longer).
    pub fn kernel_ns(&self, kernels: &[String]) -> f64 {
        busy(
            self.work
                .iter()
                .filter(|w| w.kind == OpKind::Kernel)
                .filter(|w| kernels.is_empty() || kernels.iter().any(|k| k == base_name(&w.name)))
                .map(|w| (w.kind, w.gpu)),
        )
        .0
    }

    /// The call's figures, as the metrics read them. A launch is one call that queued kernels: a
    /// graph's launch counts once however many kernel nodes it ran, as it does on the host.
    /// Copies count where they cross PCIe; of their bytes, only `needed` (the reference fix's) can
    /// earn overlap: a copy of more than the exercise needs, laid under a kernel, is not a
    /// pipeline (the overlap beyond what the extra bytes' share of the copy time could explain).
    pub fn stats(&self, needed: Option<f64>) -> Stats {
        let (kernel_ns, copy_ns, overlap_ns) = busy(self.work.iter().map(|w| (w.kind, w.gpu)));
        let mut launches: Vec<u32> = self
            .work
            .iter()
            .filter(|w| w.kind == OpKind::Kernel)
            .map(|w| w.correlation)
            .collect();
        launches.sort_unstable();
        launches.dedup();
        let copy_bytes: f64 = self
            .work
            .iter()
            .filter(|w| w.kind.crosses())
            .map(|w| w.bytes as f64)
            .sum();
        let (copy_ns, overlap_ns) = match needed {
            Some(need) if copy_bytes > need && copy_bytes > 0.0 => {
                let extra = copy_ns * (copy_bytes - need) / copy_bytes;
                (copy_ns - extra, (overlap_ns - extra).max(0.0))
            }
            _ => (copy_ns, overlap_ns),
        };
        Stats {
            launches: launches.len() as f64,
            syncs: self.syncs as f64,
            kernel_ns,
            copy_ns,
            overlap_ns,
            copy_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call of two kernels launched one way each, a graph of two kernel nodes, copies around them.
    const CALL: &str = "driver ok\ncall 0\ngpu kernel 7 1000 2000 0 11 step\ncall 1\n\
        gpu h2d 13 0 10000 4096 20 -\n\
        gpu kernel 13 10000 20000 0 21 step\n\
        gpu kernel 14 12000 16000 0 22 void ns::copy_back<256>\n\
        gpu kernel 13 20000 22000 0 23 step\n\
        gpu kernel 13 22000 24000 0 23 step\n\
        gpu d2h 14 14000 30000 4096 24 -\n\
        sync 7 100 30000\n";

    #[test]
    fn launches_are_the_calls_that_queued_kernels_and_copies_overlap_kernels() {
        let d = Driver::parse(CALL).unwrap();
        assert_eq!(d.calls.len(), 2);
        let s = d.call(1).unwrap().stats(None);
        assert_eq!(
            (s.launches, s.syncs, s.copy_bytes),
            (3.0, 1.0, 8192.0),
            "the graph's two nodes (correlation 23) are one launch"
        );
        assert_eq!(s.kernel_ns, 14000.0, "10-24 us");
        assert_eq!(s.copy_ns, 26000.0, "0-10 and 14-30 us");
        assert_eq!(s.overlap_ns, 10000.0, "14-24 us");
        assert_eq!(base_name("void ns::copy_back<256>"), "copy_back");
        assert_eq!(d.call(1).unwrap().kernel_ns(&["step".to_string()]), 14000.0);
        assert_eq!(
            d.judged_kernel_ns(&["step".to_string()], 2),
            Some(14000.0),
            "the first call is not judged"
        );
    }

    #[test]
    fn copies_beyond_what_the_reference_needs_earn_no_overlap() {
        // A decoy: the needed 4 kB copied with no kernel running, 12 kB more copied under one.
        let text = "driver ok\ncall 0\ngpu h2d 1 0 10000 4096 1 -\n\
                    gpu kernel 1 10000 40000 0 2 work\n\
                    gpu h2d 2 10000 40000 12288 3 -\n";
        let call = &Driver::parse(text).unwrap().calls[0];
        let all = call.stats(None);
        assert_eq!(all.overlap_ns / all.copy_ns, 0.75);
        let needed = call.stats(Some(4096.0));
        assert_eq!(
            (needed.copy_ns, needed.overlap_ns),
            (10000.0, 0.0),
            "the extra bytes' share of the copy time is taken from the overlap first"
        );
        let honest = call.stats(Some(16384.0));
        assert_eq!(honest, all, "the reference's own bytes change nothing");
    }

    /// Files the harness wrote on an H200 (book/gpu-runs/2026-11-29-driver-47/driver-samples/),
    /// read again here: the figures are the ones that run's verify and grade recorded from them.
    const RECORD: &str = "../book/gpu-runs/2026-11-29-driver-47";

    fn recorded(path: &str) -> String {
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(RECORD)
                .join(path),
        )
        .unwrap()
    }

    fn verify_metric(id: &str, version: &str, metric: &str) -> f64 {
        let all: serde_json::Value =
            serde_json::from_str(&recorded("1-verify-adv47-honest/call-clock-metrics.json"))
                .unwrap();
        all.as_array()
            .unwrap()
            .iter()
            .find(|v| v["id"] == id && v["version"] == version)
            .unwrap()["metrics"][metric]
            .as_f64()
            .unwrap()
    }

    #[test]
    fn the_h200_s_records_give_what_that_run_measured_from_them() {
        // 62's original: two launches a step, 48 steps, each a chevron launch.
        let d = Driver::parse(&recorded(
            "driver-samples/62-launches-original-verify.driver",
        ))
        .unwrap();
        let call = &d.calls[0];
        assert_eq!(call.stats(None).launches, 96.0);
        assert_eq!(verify_metric("62-launches", "original", "launches"), 96.0);
        assert!(call.work.iter().any(|w| w.name == "copy_back"));
        // 63's reference: 16 chunks in 4 streams, 512 MiB each way in all, mostly under kernels.
        let d = Driver::parse(&recorded(
            "driver-samples/63-transfers-reference-verify.driver",
        ))
        .unwrap();
        let s = d.calls[0].stats(Some(536_870_912.0));
        assert_eq!(s.copy_bytes, 536_870_912.0);
        let overlap = 100.0 * s.overlap_ns / s.copy_ns;
        let measured = verify_metric("63-transfers", "reference", "copy-overlap");
        assert!(
            (overlap - measured).abs() < 1e-9,
            "{overlap} against {measured}"
        );
        // 03's reference, every call traced: the kernel time its grade set beside ncu's.
        let d = Driver::parse(&recorded("driver-samples/03-race-reference-grade.driver")).unwrap();
        let journal = recorded("2-verify-refs-bench/journal-bench-xtask.jsonl");
        let graded: serde_json::Value = journal
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|r| r["exercise"] == "03-race" && !r["speed"].is_null())
            .unwrap();
        assert_eq!(
            d.judged_kernel_ns(&[], d.calls.len()),
            graded["speed"]["reference_plain_kernel_ns"].as_f64()
        );
    }

    #[test]
    fn what_it_cannot_read_is_named_and_unavailable_says_why() {
        assert_eq!(
            Driver::parse("driver unavailable CUPTI refused to subscribe (CUptiResult 39)\n"),
            Err(DriverError::Unavailable(
                "CUPTI refused to subscribe (CUptiResult 39)".into()
            ))
        );
        let why = |t: &str| Driver::parse(t).unwrap_err().to_string();
        assert!(why("").contains("line 1"));
        assert!(why("driver ok\ngpu kernel 1 0 1 0 1 k\n").contains("line 2"));
        assert!(why("driver ok\ncall 0\ngpu teleport 1 0 1 0 1 -\n").contains("line 3"));
    }
}
