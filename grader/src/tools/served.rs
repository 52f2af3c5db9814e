//! The grader's side of the timed calls (`--serve`, harness/harness.cu). Nothing the timed program
//! reports about itself is believed: the grader shares memory with it (a memfd the program keeps
//! at its own number), writes every call's inputs there, starts the call, clocks it and takes its
//! outputs itself.
//!
//! - **A clock the program cannot write.** A call's time runs from just before the grader writes
//!   the part of its inputs that only that call sees, to just after the grader has read back, at
//!   places the program cannot know, what the call wrote. The program can neither start early (its
//!   inputs do not exist yet) nor finish late (what it writes after the clock stops is not what was
//!   checked: a read-back that differs from the outputs a moment later is reported).
//! - **Inputs no program knows before its call.** Every call's inputs are the bench's, scaled
//!   towards their distribution's low end by a factor of the call's own (so that no earlier
//!   answer is right again; written before the clock starts), and then, inside the clock, changed
//!   at places drawn afresh for the call: a buffer of at most `FRESH_BYTES` is drawn anew whole, a
//!   larger one gets a new element in every `PERTURB_STRIDE` bytes. A program that copied or worked
//!   on the inputs before its call must read all of them again to find what changed.
//! - **Every call checked.** Each call's outputs are kept (`call-K.out`); the judge compares each
//!   with the reference fix's outputs of the same call: the call the judge times is always one
//!   that was checked.
//! - **CPU time from outside**: every process of the run (`RunCgroup::cpu`), over each call.
//!
//! The draws come from the session's secret (`Calls::secret`): every version timed in one session
//! gets the same calls, and no program knows them beforehand.
//!
//! The shared memory: a control page, then each buffer of the bench's layout, inputs then outputs,
//! each at a multiple of `PAGE`. The control page's words (8 bytes each, own cache lines):
//! `MAGIC` at 0; `go` at 64 (the grader: the number of the call to make, `QUIT` to end); `done`
//! at 128 (the harness: the number of the call it finished); `ready` at 192 (the harness: 1 once
//! it can take the first call); `l2` at 256 and `gpu-memory` at 320 (the harness's reports: what
//! the program says, shown as such).

use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::exercise::data;
use crate::exercise::dtype::DType;
use crate::exercise::manifest::Dist;
use crate::tools::runner::{Driver, Running, Then};

mod calls;
mod record;
mod region;

pub use calls::Calls;
use calls::{put_scaled, CallPlan, Changes};
pub use record::CallTimes;
use region::SharedRegion;

pub const PAGE: usize = 4096;
const MAGIC: u64 = 0x3145_5652_4553_4243; // "CBSERVE1"
const GO: usize = 64;
const DONE: usize = 128;
const READY: usize = 192;
const L2: usize = 256;
const GPU_MEMORY: usize = 320;
const QUIT: u64 = u64::MAX;

/// An input this small is drawn afresh for every call, inside the clock (62-launches: 64 KiB, about
/// 6 us of copying on an H100's host).
pub const FRESH_BYTES: usize = 256 << 10;
/// A larger input gets a new element somewhere in every stretch of this many bytes, inside the
/// clock: 4096 scattered writes for 256 MiB.
pub const PERTURB_STRIDE: usize = 64 << 10;
/// Elements of a larger output read back inside the clock, at places drawn for the call.
pub const SAMPLES: usize = 1024;

/// Where one buffer lies in the shared memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    pub name: String,
    pub dtype: DType,
    pub len: usize,
    pub offset: usize,
    /// How an input's values are drawn (none for an output).
    pub dist: Option<Dist>,
}

impl Slot {
    pub fn bytes(&self) -> usize {
        self.len * self.dtype.size()
    }
}

/// The shared memory's layout, as harness.cu computes it from the bench's input file.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedLayout {
    pub inputs: Vec<Slot>,
    pub outputs: Vec<Slot>,
    pub bytes: usize,
}

fn round_up(n: usize) -> usize {
    n.div_ceil(PAGE) * PAGE
}

impl SharedLayout {
    /// `inputs` (name, dtype, length, distribution) then `outputs` (name, dtype, length).
    pub fn new(
        inputs: &[(String, DType, usize, Option<Dist>)],
        outputs: &[(String, DType, usize)],
    ) -> SharedLayout {
        let mut at = PAGE;
        let mut place = |name: &str, dtype: DType, len: usize, dist: Option<Dist>| {
            let slot = Slot {
                name: name.to_string(),
                dtype,
                len,
                offset: at,
                dist,
            };
            at += round_up(slot.bytes());
            slot
        };
        let inputs = inputs
            .iter()
            .map(|(n, d, l, dist)| place(n, *d, *l, *dist))
            .collect();
        let outputs = outputs
            .iter()
            .map(|(n, d, l)| place(n, *d, *l, None))
            .collect();
        SharedLayout {
            inputs,
            outputs,
            bytes: at,
        }
    }
}

/// A timed process's calls, driven and clocked by the grader: the job's `driver`, with the region
/// its program keeps (`fd`, `--serve FD`).
#[derive(Debug)]
pub struct Served {
    region: SharedRegion,
    calls: Calls,
    /// Spin while the call runs (the judged clock: no wake-up latency) or poll (ncu's runs, where
    /// only the kernels' times count and several run at once).
    spin: bool,
    /// Where the clock's record goes, and each call's outputs (none: not kept).
    clock_file: PathBuf,
    call_files: Vec<PathBuf>,
    /// How long the program may take before its first call and after its last.
    margins: Margins,
}

/// How long a timed program may take to start (until it is ready for its first call) and to end
/// after its last call. A timed run has the GPU alone, so what the program does then holds every
/// other program of a class back: without these, a program that sleeps before its calls (the
/// adversarial `slow-start`) or after them held the GPU for up to its whole time limit, each time
/// it was timed. None: only the run's time limit.
#[derive(Debug, Clone, Copy, Default)]
pub struct Margins {
    pub start: Option<Duration>,
    pub end: Option<Duration>,
}

impl Served {
    /// The shared memory for `calls`, and the files the driver will write in `dir` (which must be
    /// the grader's: no run of the submission may write there). `keep`: keep each call's outputs.
    pub fn new(calls: Calls, spin: bool, dir: &Path, keep: bool) -> std::io::Result<Served> {
        let region = SharedRegion::new(calls.layout.bytes)?;
        let call_files = if keep {
            (1..=calls.judged())
                .map(|k| dir.join(format!("call-{k}.out")))
                .collect()
        } else {
            Vec::new()
        };
        Ok(Served {
            region,
            spin,
            clock_file: dir.join("clock"),
            call_files,
            calls,
            margins: Margins::default(),
        })
    }

    /// Held to `margins` before its first call and after its last.
    pub fn within(mut self, margins: Margins) -> Served {
        self.margins = margins;
        self
    }

    /// The recorded call (numbered from 1 among all the process's calls), where there is one.
    pub fn recorded_call(&self) -> Option<u32> {
        self.calls.recorded_call()
    }

    /// The descriptor the program must keep (`--serve FD`).
    pub fn fd(&self) -> RawFd {
        self.region.fd.as_raw_fd()
    }

    /// What the driver writes: the clock's record, then each call's outputs.
    pub fn files(&self) -> Vec<PathBuf> {
        std::iter::once(self.clock_file.clone())
            .chain(self.call_files.iter().cloned())
            .collect()
    }

    /// Wait until the word at `at` holds `want`: spinning or polling, until the program ends, the
    /// job's time is up, or `within` has gone by (the program's margin to be ready). The word holds
    /// `before` until then; any other value was written out of turn (something beside the
    /// harness's loop writes the control page) and ends the wait at once: fd-scribble's thread,
    /// writing `done` ahead of every call, held 62's timed run to its time limit.
    fn wait_for(
        &self,
        at: usize,
        want: u64,
        before: u64,
        run: &Running,
        spin: bool,
        within: Option<Duration>,
    ) -> Result<(), WaitError> {
        let margin = within.map(|d| (Instant::now() + d, d));
        let mut n: u32 = 0;
        loop {
            let now = self.region.word(at).load(Ordering::Acquire);
            if now == want {
                return Ok(());
            }
            if now != before {
                return Err(WaitError::OutOfTurn { now, want });
            }
            n = n.wrapping_add(1);
            if n.is_multiple_of(1024) || !spin {
                if !run.alive() {
                    // It may have answered just before it ended.
                    if self.region.word(at).load(Ordering::Acquire) == want {
                        return Ok(());
                    }
                    return Err(WaitError::Ended);
                }
                if Instant::now() > run.deadline {
                    return Err(WaitError::TimeUp);
                }
                if let Some((_, d)) = margin.filter(|(by, _)| Instant::now() > *by) {
                    return Err(WaitError::NotReady(d));
                }
            }
            if spin {
                std::hint::spin_loop();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }

    /// Write the outputs as they are now to the call's file `path`, straight from the shared
    /// memory (a 128 MiB output copied first cost 0.15 s a call); the file, and where each
    /// output's bytes start in it.
    fn keep_outputs(&self, path: &Path) -> std::io::Result<(std::fs::File, Vec<u64>)> {
        let named: Vec<(&str, DType, &[u8])> = self
            .calls
            .layout
            .outputs
            .iter()
            .map(|s| {
                (
                    s.name.as_str(),
                    s.dtype,
                    self.region.bytes(s.offset, s.bytes()),
                )
            })
            .collect();
        let starts = data::write_raw_outputs(path, &named)?;
        Ok((std::fs::File::open(path)?, starts))
    }

    /// Whether what was read back inside the clock differs from the outputs now: from the kept
    /// file where there is one (the snapshot the judge checks), else from the shared memory.
    fn read_back_changed(
        &self,
        plan: &CallPlan,
        read_back: &[Vec<u8>],
        kept: Option<&(std::fs::File, Vec<u64>)>,
    ) -> std::io::Result<bool> {
        use std::os::unix::fs::FileExt;
        for (i, (slot, samples)) in self
            .calls
            .layout
            .outputs
            .iter()
            .zip(&plan.samples)
            .enumerate()
        {
            let now = |from: usize, len: usize| -> std::io::Result<Vec<u8>> {
                match kept {
                    Some((file, starts)) => {
                        let mut b = vec![0u8; len];
                        file.read_exact_at(&mut b, starts[i] + from as u64)?;
                        Ok(b)
                    }
                    None => Ok(self.region.get(slot.offset + from, len)),
                }
            };
            let size = slot.dtype.size();
            let same = match samples {
                None => now(0, slot.bytes())? == read_back[i],
                Some(at) => {
                    let mut same = true;
                    for (e, early) in at.iter().zip(read_back[i].chunks(size)) {
                        same &= now(e * size, size)? == early;
                    }
                    same
                }
            };
            if !same {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The calls, one after another. Returns each call's record and why they stopped, if they did.
    fn make_calls(&self, run: &Running) -> (Vec<Called>, Option<String>, Option<f64>) {
        if let Err(why) = self.wait_for(READY, 1, 0, run, false, self.margins.start) {
            let why = match why {
                WaitError::NotReady(_) => why.to_string(),
                other => format!("{other} before it was ready for its first call"),
            };
            return (Vec::new(), Some(why), None);
        }
        let ready_ns = run.started.elapsed().as_secs_f64() * 1e9;
        let mut done = Vec::new();
        for k in 1..=self.calls.total() {
            match self.make_call(k, run) {
                Ok(called) => done.push(called),
                Err(why) => return (done, Some(why.to_string()), Some(ready_ns)),
            }
        }
        self.region.word(GO).store(QUIT, Ordering::Release);
        (done, None, Some(ready_ns))
    }

    /// Why the program is to be ended after its calls, if it is: still running `margins.end`
    /// after the last call was answered.
    fn end_within(&self, run: &Running) -> Option<String> {
        let end = self.margins.end?;
        let by = Instant::now() + end;
        while run.alive() && Instant::now() < by.min(run.deadline) {
            std::thread::sleep(Duration::from_millis(2));
        }
        (run.alive() && Instant::now() < run.deadline).then(|| {
            format!(
                "it was still running {} s after its last call, the most a timed program may take to end (it has the GPU alone)",
                end.as_secs_f64()
            )
        })
    }

    /// Call `k`, clocked; Err says why it stopped.
    fn make_call(&self, k: u32, run: &Running) -> Result<Called, CallError> {
        let plan = self.calls.plan(k);
        self.before_the_clock(&plan);
        let cpu_before = run.cgroup.map(|c| c.cpu());
        std::sync::atomic::fence(Ordering::SeqCst);
        // The clock: what only this call sees, the call, the read-back.
        let start = Instant::now();
        self.put_fresh_inputs(&plan);
        self.region.word(GO).store(u64::from(k), Ordering::Release);
        self.wait_for(DONE, u64::from(k), u64::from(k - 1), run, self.spin, None)
            .map_err(|why| CallError::Waiting { k, why })?;
        let read_back = self.read_back(&plan);
        let wall_ns = start.elapsed().as_secs_f64() * 1e9;
        let cpu_ns = cpu_before
            .zip(run.cgroup)
            .map(|(before, c)| c.cpu().since(&before));
        // After the clock: the outputs as the judge will see them (the call's file, written
        // straight from the shared memory, where they are kept), and whether the read-back
        // still holds there.
        // The recorded call (after the judged ones) has no file: its outputs are not kept.
        let kept = match self.call_files.get(k as usize - 1) {
            None => None,
            Some(path) => Some(
                self.keep_outputs(path)
                    .map_err(|error| CallError::Keeping { k, error })?,
            ),
        };
        let changed = self
            .read_back_changed(&plan, &read_back, kept.as_ref())
            .map_err(|error| CallError::ReadingBack { k, error })?;
        Ok(Called {
            wall_ns,
            cpu_ns,
            changed,
        })
    }

    /// Before the clock: the call's scaled inputs (what the program may see early), its
    /// outputs poisoned (NaN for floats), every element the call does not write caught.
    fn before_the_clock(&self, plan: &CallPlan) {
        let layout = &self.calls.layout;
        for ((slot, base), (scale, changes)) in layout
            .inputs
            .iter()
            .zip(self.calls.base.iter())
            .zip(plan.scale.iter().zip(&plan.changes))
        {
            if let Changes::Elements(_) = changes {
                put_scaled(&base.data, slot.dist, *scale, &mut |at, bytes| {
                    self.region.put(slot.offset + at, bytes)
                });
            }
        }
        for slot in &layout.outputs {
            self.region.fill(slot.offset, slot.bytes(), 0xFF);
        }
    }

    /// Inside the clock: what only this call sees (a small input whole, a larger one's elements).
    fn put_fresh_inputs(&self, plan: &CallPlan) {
        for (slot, changes) in self.calls.layout.inputs.iter().zip(&plan.changes) {
            match changes {
                Changes::Whole(bytes) => self.region.put(slot.offset, bytes),
                Changes::Elements(list) => {
                    for (at, bytes) in list {
                        self.region.put(slot.offset + at * slot.dtype.size(), bytes);
                    }
                }
            }
        }
    }

    /// Inside the clock: each output whole, or its elements at the places drawn for the call.
    fn read_back(&self, plan: &CallPlan) -> Vec<Vec<u8>> {
        self.calls
            .layout
            .outputs
            .iter()
            .zip(&plan.samples)
            .map(|(slot, samples)| match samples {
                None => self.region.get(slot.offset, slot.bytes()),
                Some(at) => at
                    .iter()
                    .flat_map(|i| {
                        self.region
                            .get(slot.offset + i * slot.dtype.size(), slot.dtype.size())
                    })
                    .collect(),
            })
            .collect()
    }
}

/// Why the grader stopped waiting on the control page.
#[derive(Debug, thiserror::Error)]
enum WaitError {
    #[error("the control page was written out of turn ({now} where the harness writes {want})")]
    OutOfTurn { now: u64, want: u64 },
    #[error("the program ended")]
    Ended,
    #[error("its time ran out")]
    TimeUp,
    /// Past `Margins::start`, the only wait with a margin of its own.
    #[error("it was not ready for its first call within {} s, the most a timed program may take to start (it has the GPU alone)", .0.as_secs_f64())]
    NotReady(Duration),
}

/// Why call `k` stopped: the run's `failure` in the clock's record. The I/O errors are part of
/// the message, not a `source`, so that nothing prints them twice.
#[derive(Debug, thiserror::Error)]
enum CallError {
    #[error("{why} during call {k}")]
    Waiting { k: u32, why: WaitError },
    #[error("the grader could not keep call {k}'s outputs: {error}")]
    Keeping { k: u32, error: std::io::Error },
    #[error("the grader could not read call {k}'s outputs back: {error}")]
    ReadingBack { k: u32, error: std::io::Error },
}

/// One call as the grader saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Called {
    /// The call on the grader's clock: its fresh inputs, the call, the read-back.
    pub wall_ns: f64,
    /// The CPU time of every process of the run meanwhile (none without a cgroup).
    pub cpu_ns: Option<f64>,
    /// The outputs read back inside the clock differed from the outputs a moment later: the
    /// program went on writing them after it said the call was done.
    pub changed: bool,
}

impl Driver for Served {
    /// A new process starts from a clean control page (ncu runs a busy profile again).
    fn prepare(&self) {
        self.region.populate();
        for at in [GO, DONE, READY, L2, GPU_MEMORY] {
            self.region.word(at).store(0, Ordering::Release);
        }
    }

    /// A run whose calls stopped early is ended: what the grader records of it is complete.
    fn drive(&self, run: &Running) -> Then {
        let (calls, mut failure, ready_ns) = self.make_calls(run);
        if failure.is_none() {
            failure = self.end_within(run);
        }
        let then = if failure.is_some() {
            Then::Stop
        } else {
            Then::Wait
        };
        // The recorded call, where one was made, comes after the judged ones.
        let (judged, recorded) = calls.split_at(calls.len().min(self.calls.judged() as usize));
        let record = CallTimes {
            calls_ns: judged.iter().map(|c| c.wall_ns).collect(),
            cpu_ns: judged.iter().map(|c| c.cpu_ns).collect(),
            changed: judged.iter().map(|c| c.changed).collect(),
            recorded_ns: recorded.first().map(|c| c.wall_ns),
            gpu_memory: Some(self.region.word(GPU_MEMORY).load(Ordering::Acquire) as f64)
                .filter(|m| *m > 0.0),
            l2_found: Some(self.region.word(L2).load(Ordering::Acquire))
                .filter(|_| ready_ns.is_some()),
            ready_ns,
            failure,
        };
        let _ = std::fs::write(&self.clock_file, record.to_text());
        then
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_the_harness_s_pages_and_the_record_round_trips() {
        let l = SharedLayout::new(
            &[(
                "x".into(),
                DType::F32,
                1000,
                Some(Dist::Uniform { lo: 0.0, hi: 1.0 }),
            )],
            &[("y".into(), DType::F64, 3)],
        );
        assert_eq!(
            (l.inputs[0].offset, l.outputs[0].offset, l.bytes),
            (4096, 8192, 12288)
        );
        let t = CallTimes {
            calls_ns: vec![900.0, 120.0, 150.0],
            cpu_ns: vec![Some(1.0), None, Some(3.0)],
            changed: vec![false, true, false],
            recorded_ns: Some(160.0),
            gpu_memory: Some(5.0),
            l2_found: Some(0),
            ready_ns: Some(7.0),
            failure: Some("it ended".into()),
        };
        assert_eq!(CallTimes::parse(&t.to_text()), Some(t.clone()));
        assert_eq!(t.judged_ns(), Some(120.0), "the fastest after the first");
        assert_eq!(
            t.total_ns(),
            1330.0,
            "the recorded call is outside the judged ones, inside the process's calls"
        );
        assert_eq!(t.judged_cpu_ns(), None, "a call without CPU time: none");
        assert_eq!(
            CallTimes::parse("call 2 1 - 0\n"),
            None,
            "calls are numbered from 1, in order"
        );
        assert_eq!(
            CallTimes::parse("90000\n"),
            None,
            "the harness's old one-column file is not the grader's record"
        );
    }
}
