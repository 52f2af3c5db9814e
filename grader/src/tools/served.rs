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

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::exercise::data;
use crate::exercise::dtype::DType;
use crate::exercise::manifest::Dist;
use crate::exercise::reference::{Buffer, Data};
use crate::tools::runner::{Driver, Running, Then};

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
pub struct Layout {
    pub inputs: Vec<Slot>,
    pub outputs: Vec<Slot>,
    pub bytes: usize,
}

fn round_up(n: usize) -> usize {
    n.div_ceil(PAGE) * PAGE
}

impl Layout {
    /// `inputs` (name, dtype, length, distribution) then `outputs` (name, dtype, length).
    pub fn new(
        inputs: &[(String, DType, usize, Option<Dist>)],
        outputs: &[(String, DType, usize)],
    ) -> Layout {
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
        Layout {
            inputs,
            outputs,
            bytes: at,
        }
    }
}

/// What a session's timed calls are made of.
#[derive(Debug, Clone)]
pub struct Calls {
    /// The bench's inputs, in the layout's order.
    pub base: Arc<Vec<Buffer>>,
    pub layout: Layout,
    /// Calls per process the judge reads (the bench's `repeat`).
    pub count: u32,
    /// One call more after those, for the program's timeline (`--timeline FROM FILE`): served and
    /// waited for like the others, its time kept apart, its outputs not kept.
    pub recorded: bool,
    /// The session's secret: the calls' factors, the places changed and read back.
    pub secret: u64,
}

/// One call as the grader prepares it, before its clock starts.
struct CallPlan {
    /// Per input: the factor of its base values (1 for the first call).
    scale: Vec<f64>,
    /// Per input: its whole new contents (a small input) or the (element, bytes) changed in it.
    changes: Vec<Changes>,
    /// Per output: the elements read back inside the clock (None: all of it).
    samples: Vec<Option<Vec<usize>>>,
}

enum Changes {
    Whole(Vec<u8>),
    Elements(Vec<(usize, Vec<u8>)>),
}

impl Calls {
    fn rng(&self, call: u32, what: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(
            self.secret ^ (u64::from(call) << 32) ^ what.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        )
    }

    fn plan(&self, call: u32) -> CallPlan {
        let mut rng = self.rng(call, 1);
        let scale = self
            .layout
            .inputs
            .iter()
            .map(|_| {
                if call == 1 {
                    1.0
                } else {
                    rng.random_range(0.55..0.95)
                }
            })
            .collect();
        let changes = self
            .layout
            .inputs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut rng = self.rng(call, 100 + i as u64);
                let dist = s.dist.expect("an input has a distribution");
                if s.bytes() <= FRESH_BYTES {
                    return Changes::Whole(data::to_bytes(&data::draw(
                        s.dtype, dist, s.len, &mut rng,
                    )));
                }
                let per_stretch = (PERTURB_STRIDE / s.dtype.size()).max(1);
                let elements = (0..s.len.div_ceil(per_stretch))
                    .map(|k| {
                        let first = k * per_stretch;
                        let at = rng.random_range(first..(first + per_stretch).min(s.len));
                        (at, data::to_bytes(&data::draw(s.dtype, dist, 1, &mut rng)))
                    })
                    .collect();
                Changes::Elements(elements)
            })
            .collect();
        let samples = self
            .layout
            .outputs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut rng = self.rng(call, 200 + i as u64);
                (s.bytes() > FRESH_BYTES)
                    .then(|| (0..SAMPLES).map(|_| rng.random_range(0..s.len)).collect())
            })
            .collect();
        CallPlan {
            scale,
            changes,
            samples,
        }
    }
}

/// Elements converted at a time when a call's inputs are written (256 KiB of f32): no copy of a
/// whole buffer is made. Whole copies (scale, encode, then write) took the grader 0.3 s a call for
/// 128 MiB (`cargo bench -p grader --bench served_calls`).
const STRETCH: usize = 1 << 16;

/// The base values scaled towards the distribution's low end: `lo + (x - lo) * f`, inside the
/// distribution's range for floats and integers alike; handed to `put` a stretch at a time, as
/// (byte offset, little-endian bytes).
fn put_scaled(base: &Data, dist: Option<Dist>, f: f64, put: &mut dyn FnMut(usize, &[u8])) {
    let lo = match dist {
        Some(Dist::Uniform { lo, .. }) => lo,
        Some(Dist::Integers { lo, .. }) => lo as f64,
        None => 0.0,
    };
    let s = |x: f64| lo + (x - lo) * f;
    let mut buf = Vec::with_capacity(STRETCH * 8);
    // The first call's inputs are the bench's, bit for bit.
    let same = f == 1.0;
    match base {
        Data::F32(v) => by_stretch(v, &mut buf, put, |x: f32| {
            (if same { x } else { s(f64::from(x)) as f32 }).to_le_bytes()
        }),
        Data::F64(v) => by_stretch(v, &mut buf, put, |x: f64| {
            (if same { x } else { s(x) }).to_le_bytes()
        }),
        Data::I32(v) => by_stretch(v, &mut buf, put, |x: i32| {
            (if same {
                x
            } else {
                s(f64::from(x)).floor() as i32
            })
            .to_le_bytes()
        }),
        Data::U32(v) => by_stretch(v, &mut buf, put, |x: u32| {
            (if same {
                x
            } else {
                s(f64::from(x)).floor() as u32
            })
            .to_le_bytes()
        }),
    }
}

/// `values` encoded by `bytes_of` into `buf` a stretch at a time, each stretch handed to `put`.
fn by_stretch<T: Copy, const N: usize>(
    values: &[T],
    buf: &mut Vec<u8>,
    put: &mut dyn FnMut(usize, &[u8]),
    bytes_of: impl Fn(T) -> [u8; N],
) {
    for (k, stretch) in values.chunks(STRETCH).enumerate() {
        buf.resize(stretch.len() * N, 0);
        for (to, &x) in buf.chunks_exact_mut(N).zip(stretch) {
            to.copy_from_slice(&bytes_of(x));
        }
        put(k * STRETCH * N, buf);
    }
}

/// The memory shared with the program: a memfd (closed at exec but for the timed program, which
/// the runner hands it to), mapped here.
#[derive(Debug)]
struct Region {
    fd: OwnedFd,
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping lives as long as the Region; the grader's driver is its only user here, and
// what the other process does to it is read with volatile copies.
unsafe impl Send for Region {}
unsafe impl Sync for Region {}

impl Region {
    fn new(len: usize) -> std::io::Result<Region> {
        // SAFETY: memfd_create, ftruncate, fcntl and mmap on a descriptor we own; results checked.
        unsafe {
            let fd = libc::memfd_create(
                c"cudabugs-served".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            );
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let fd = OwnedFd::from_raw_fd(fd);
            if libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The program holds the same file: truncated under the grader's mapping, the grader's
            // next read of it would die of SIGBUS. Sealed, its size is fixed for good.
            let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
            if libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let base = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            let r = Region {
                fd,
                base: base.cast(),
                len,
            };
            r.word(0).store(MAGIC, Ordering::Release);
            Ok(r)
        }
    }

    fn word(&self, at: usize) -> &AtomicU64 {
        assert!(at + 8 <= PAGE);
        // SAFETY: inside the control page, 8-byte aligned (offsets are multiples of 64).
        unsafe { &*(self.base.add(at) as *const AtomicU64) }
    }

    /// Write `bytes` at `offset`.
    fn put(&self, offset: usize, bytes: &[u8]) {
        assert!(offset + bytes.len() <= self.len);
        // SAFETY: inside the mapping; the other process may read it meanwhile, which is its affair.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.base.add(offset), bytes.len()) }
    }

    fn fill(&self, offset: usize, len: usize, byte: u8) {
        assert!(offset + len <= self.len);
        // SAFETY: as in `put`.
        unsafe { std::ptr::write_bytes(self.base.add(offset), byte, len) }
    }

    /// Allocate and map every page now, in one call, rather than one fault at a time in the first
    /// call's writes. Done when a process is about to start (`Driver::prepare`), not when the
    /// region is made: a run served from what was kept (`launcher::Kept`) never starts one, and
    /// 63's 512 MiB would be zeroed for nothing. A kernel without `MADV_POPULATE_WRITE` (before
    /// 5.14) faults the pages in as they are written, as before.
    fn populate(&self) {
        // SAFETY: advice on the mapping this Region owns; a failure only means no prefaulting.
        unsafe {
            libc::madvise(self.base.cast(), self.len, libc::MADV_POPULATE_WRITE);
        }
    }

    /// The `len` bytes at `offset`, for a system call to copy (`write`): the other process may
    /// be writing them meanwhile, so nothing here reads them as values.
    fn bytes(&self, offset: usize, len: usize) -> &[u8] {
        assert!(offset + len <= self.len);
        // SAFETY: inside the mapping, which lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.base.add(offset), len) }
    }

    /// A copy of `len` bytes at `offset`.
    fn get(&self, offset: usize, len: usize) -> Vec<u8> {
        assert!(offset + len <= self.len);
        let mut out = vec![0u8; len];
        // SAFETY: inside the mapping; the other process may be writing it, so nothing here assumes
        // the bytes stay what they were.
        unsafe { std::ptr::copy_nonoverlapping(self.base.add(offset), out.as_mut_ptr(), len) };
        out
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// A timed process's calls, driven and clocked by the grader: the job's `driver`, with the region
/// its program keeps (`fd`, `--serve FD`).
#[derive(Debug)]
pub struct Served {
    region: Region,
    calls: Calls,
    /// Spin while the call runs (the judged clock: no wake-up latency) or poll (ncu's runs, where
    /// only the kernels' times count and several run at once).
    spin: bool,
    /// Where the clock's record goes, and each call's outputs (none: not kept).
    clock_file: PathBuf,
    call_files: Vec<PathBuf>,
}

impl Served {
    /// The shared memory for `calls`, and the files the driver will write in `dir` (which must be
    /// the grader's: no run of the submission may write there). `keep`: keep each call's outputs.
    pub fn new(calls: Calls, spin: bool, dir: &Path, keep: bool) -> std::io::Result<Served> {
        let region = Region::new(calls.layout.bytes)?;
        let call_files = if keep {
            (1..=calls.count)
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
        })
    }

    /// How many of the calls the judge reads (`Calls::count`); a recorded call comes after them.
    pub fn judged_calls(&self) -> u32 {
        self.calls.count
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

    /// Wait until the word at `at` holds `want`: spinning or polling, until the program ends or
    /// the job's time is up. The word holds `before` until then; any other value was written out
    /// of turn (something beside the harness's loop writes the control page) and ends the wait at
    /// once: fd-scribble's thread, writing `done` ahead of every call, held 62's timed run to its
    /// time limit.
    fn wait_for(
        &self,
        at: usize,
        want: u64,
        before: u64,
        run: &Running,
        spin: bool,
    ) -> Result<(), String> {
        let mut n: u32 = 0;
        loop {
            let now = self.region.word(at).load(Ordering::Acquire);
            if now == want {
                return Ok(());
            }
            if now != before {
                return Err(format!(
                    "the control page was written out of turn ({now} where the harness writes {want})"
                ));
            }
            n = n.wrapping_add(1);
            if n.is_multiple_of(1024) || !spin {
                if !run.alive() {
                    // It may have answered just before it ended.
                    if self.region.word(at).load(Ordering::Acquire) == want {
                        return Ok(());
                    }
                    return Err("the program ended".into());
                }
                if Instant::now() > run.deadline {
                    return Err("its time ran out".into());
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
        let layout = &self.calls.layout;
        if let Err(why) = self.wait_for(READY, 1, 0, run, false) {
            return (
                Vec::new(),
                Some(format!("{why} before it was ready for its first call")),
                None,
            );
        }
        let ready_ns = run.started.elapsed().as_secs_f64() * 1e9;
        let mut done = Vec::new();
        for k in 1..=self.calls.count + u32::from(self.calls.recorded) {
            let plan = self.calls.plan(k);
            // Before the clock: the call's scaled inputs (what the program may see early), its
            // outputs poisoned (NaN for floats), every element the call does not write caught.
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
            let cpu_before = run.cgroup.map(|c| c.cpu());
            std::sync::atomic::fence(Ordering::SeqCst);
            // The clock: what only this call sees, the call, the read-back.
            let start = Instant::now();
            for (slot, changes) in layout.inputs.iter().zip(&plan.changes) {
                match changes {
                    Changes::Whole(bytes) => self.region.put(slot.offset, bytes),
                    Changes::Elements(list) => {
                        for (at, bytes) in list {
                            self.region.put(slot.offset + at * slot.dtype.size(), bytes);
                        }
                    }
                }
            }
            self.region.word(GO).store(u64::from(k), Ordering::Release);
            if let Err(why) = self.wait_for(DONE, u64::from(k), u64::from(k - 1), run, self.spin) {
                return (done, Some(format!("{why} during call {k}")), Some(ready_ns));
            }
            let read_back: Vec<Vec<u8>> = layout
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
                .collect();
            let wall_ns = start.elapsed().as_secs_f64() * 1e9;
            let cpu_ns = cpu_before
                .zip(run.cgroup)
                .map(|(before, c)| c.cpu().since(&before));
            // After the clock: the outputs as the judge will see them (the call's file, written
            // straight from the shared memory, where they are kept), and whether the read-back
            // still holds there.
            let kept = match self.call_files.get(k as usize - 1) {
                None => None,
                Some(path) => match self.keep_outputs(path) {
                    Ok(kept) => Some(kept),
                    Err(e) => {
                        return (
                            done,
                            Some(format!("the grader could not keep call {k}'s outputs: {e}")),
                            Some(ready_ns),
                        )
                    }
                },
            };
            let changed = match self.read_back_changed(&plan, &read_back, kept.as_ref()) {
                Ok(changed) => changed,
                Err(e) => {
                    return (
                        done,
                        Some(format!(
                            "the grader could not read call {k}'s outputs back: {e}"
                        )),
                        Some(ready_ns),
                    )
                }
            };
            done.push(Called {
                wall_ns,
                cpu_ns,
                changed,
            });
        }
        self.region.word(GO).store(QUIT, Ordering::Release);
        (done, None, Some(ready_ns))
    }
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
        let (calls, failure, ready_ns) = self.make_calls(run);
        let then = if failure.is_some() {
            Then::Stop
        } else {
            Then::Wait
        };
        let (judged, recorded) = calls.split_at(calls.len().min(self.calls.count as usize));
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

/// What the grader's clock recorded of one timed process (the driver's `clock` file).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallTimes {
    /// Each call on the grader's clock.
    pub calls_ns: Vec<f64>,
    /// Each call's CPU time, every process of the run (None where the run had no cgroup).
    pub cpu_ns: Vec<Option<f64>>,
    /// Whether each call's outputs changed after it said it was done.
    pub changed: Vec<bool>,
    /// The call made for the timeline after those (`Calls::recorded`): the judge reads none of it.
    pub recorded_ns: Option<f64>,
    /// The most device memory in use, as the program reported it (asks a person to look, no more).
    pub gpu_memory: Option<f64>,
    /// The persisting-L2 limit the program's context started with, as the program reported it.
    pub l2_found: Option<u64>,
    /// From the start of the process until it was ready for its first call.
    pub ready_ns: Option<f64>,
    /// Why the calls stopped before the last, if they did.
    pub failure: Option<String>,
}

impl CallTimes {
    pub fn to_text(&self) -> String {
        let mut t = String::new();
        if let Some(r) = self.ready_ns {
            t.push_str(&format!("ready-ns {r:.0}\n"));
        }
        if let Some(l2) = self.l2_found {
            t.push_str(&format!("l2 {l2}\n"));
        }
        if let Some(m) = self.gpu_memory {
            t.push_str(&format!("gpu-memory {m:.0}\n"));
        }
        for (i, wall) in self.calls_ns.iter().enumerate() {
            let cpu = self
                .cpu_ns
                .get(i)
                .copied()
                .flatten()
                .map_or("-".to_string(), |c| format!("{c:.0}"));
            t.push_str(&format!(
                "call {} {wall:.0} {cpu} {}\n",
                i + 1,
                u8::from(self.changed.get(i).copied().unwrap_or(false))
            ));
        }
        if let Some(r) = self.recorded_ns {
            t.push_str(&format!("recorded-ns {r:.0}\n"));
        }
        if let Some(f) = &self.failure {
            t.push_str(&format!("failure {}\n", f.replace('\n', " ")));
        }
        t
    }

    /// The driver's `clock` file; None where it is not one.
    pub fn parse(text: &str) -> Option<CallTimes> {
        let mut t = CallTimes::default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "ready-ns" => t.ready_ns = Some(rest.trim().parse().ok()?),
                "l2" => t.l2_found = Some(rest.trim().parse().ok()?),
                "gpu-memory" => t.gpu_memory = Some(rest.trim().parse().ok()?),
                "recorded-ns" => t.recorded_ns = Some(rest.trim().parse().ok()?),
                "failure" => t.failure = Some(rest.to_string()),
                "call" => {
                    let f: Vec<&str> = rest.split_whitespace().collect();
                    let [n, wall, cpu, changed] = f[..] else {
                        return None;
                    };
                    if n.parse::<usize>().ok()? != t.calls_ns.len() + 1 {
                        return None;
                    }
                    t.calls_ns.push(wall.parse().ok()?);
                    t.cpu_ns.push(if cpu == "-" {
                        None
                    } else {
                        Some(cpu.parse().ok()?)
                    });
                    t.changed.push(changed == "1");
                }
                _ => return None,
            }
        }
        Some(t)
    }

    /// The call the judge holds a version to: the fastest after the first (which loads the
    /// kernels). Every call's inputs differ and every call was checked.
    pub fn judged_ns(&self) -> Option<f64> {
        let rest = if self.calls_ns.len() > 1 {
            &self.calls_ns[1..]
        } else {
            &self.calls_ns[..]
        };
        rest.iter().copied().reduce(f64::min)
    }

    /// The least CPU time of a call after the first.
    pub fn judged_cpu_ns(&self) -> Option<f64> {
        let rest = if self.cpu_ns.len() > 1 {
            &self.cpu_ns[1..]
        } else {
            &self.cpu_ns[..]
        };
        rest.iter()
            .copied()
            .collect::<Option<Vec<f64>>>()?
            .into_iter()
            .reduce(f64::min)
    }

    /// Every call the process made, the recorded one included.
    pub fn total_ns(&self) -> f64 {
        self.calls_ns.iter().sum::<f64>() + self.recorded_ns.unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the timed program can do with the descriptor it is handed: write, not resize. A
    /// truncated file under the grader's mapping killed the grader with SIGBUS at its next read.
    #[test]
    fn the_program_cannot_shrink_the_shared_memory_under_the_grader() {
        let r = Region::new(4 * PAGE).unwrap();
        // SAFETY: plain system calls on a descriptor this test owns.
        let (shrunk, errno, grown) = unsafe {
            let shrunk = libc::ftruncate(r.fd.as_raw_fd(), 0);
            let errno = std::io::Error::last_os_error().raw_os_error();
            let grown = libc::ftruncate(r.fd.as_raw_fd(), (8 * PAGE) as libc::off_t);
            (shrunk, errno, grown)
        };
        assert_eq!((shrunk, errno, grown), (-1, Some(libc::EPERM), -1));
        r.put(PAGE, b"still here");
        assert_eq!(r.get(PAGE, 10), b"still here");
    }

    #[test]
    fn the_layout_is_the_harness_s_pages_and_the_record_round_trips() {
        let l = Layout::new(
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

    #[test]
    fn each_call_sees_its_own_inputs_and_the_same_in_every_version() {
        let layout = Layout::new(
            &[
                (
                    "small".into(),
                    DType::F32,
                    100,
                    Some(Dist::Uniform { lo: 0.0, hi: 1.0 }),
                ),
                (
                    "big".into(),
                    DType::U32,
                    1 << 20,
                    Some(Dist::Integers { lo: 0, hi: 255 }),
                ),
            ],
            &[("out".into(), DType::F32, 1 << 20)],
        );
        let calls = Calls {
            base: Arc::new(Vec::new()),
            layout,
            count: 3,
            recorded: false,
            secret: 42,
        };
        let (a, b) = (calls.plan(2), calls.plan(2));
        let whole = |p: &CallPlan| match &p.changes[0] {
            Changes::Whole(v) => v.clone(),
            _ => panic!("a small input is drawn whole"),
        };
        let elements = |p: &CallPlan| match &p.changes[1] {
            Changes::Elements(v) => v.clone(),
            _ => panic!("a big input gets elements changed"),
        };
        assert_eq!(whole(&a), whole(&b), "the same session, the same call");
        assert_ne!(
            whole(&a),
            whole(&calls.plan(3)),
            "another call, other inputs"
        );
        assert_eq!(
            elements(&a).len(),
            (4 << 20) / PERTURB_STRIDE,
            "one element in every stretch"
        );
        assert!(elements(&a)
            .iter()
            .enumerate()
            .all(|(k, (i, _))| (k * PERTURB_STRIDE / 4..(k + 1) * PERTURB_STRIDE / 4).contains(i)));
        assert_eq!(
            calls.plan(1).scale,
            vec![1.0, 1.0],
            "the first call's base is the bench's"
        );
        assert!(a.scale.iter().all(|f| (0.55..0.95).contains(f)));
        assert_eq!(a.samples[0].as_ref().map(Vec::len), Some(SAMPLES));
        let other = Calls {
            secret: 43,
            ..calls
        };
        assert_ne!(
            whole(&other.plan(2)),
            whole(&a),
            "another session, other inputs"
        );
    }

    fn scaled(base: &Data, dist: Option<Dist>, f: f64) -> Vec<u8> {
        let mut out = Vec::new();
        put_scaled(base, dist, f, &mut |at, bytes| {
            assert_eq!(at, out.len(), "stretches in order, none left out");
            out.extend_from_slice(bytes)
        });
        out
    }

    #[test]
    fn the_first_call_is_the_bench_bit_for_bit_a_stretch_at_a_time() {
        let base = Data::F32((0..STRETCH * 2 + 5).map(|i| i as f32 * 0.1 - 3.0).collect());
        let dist = Some(Dist::Uniform { lo: -3.0, hi: 1e6 });
        assert_eq!(scaled(&base, dist, 1.0), data::to_bytes(&base));
        let half = scaled(&base, dist, 0.5);
        assert_eq!(half.len(), (STRETCH * 2 + 5) * 4);
        let last = f32::from_le_bytes(half[half.len() - 4..].try_into().unwrap());
        assert_eq!(
            last,
            (-3.0 + (((STRETCH * 2 + 4) as f32 * 0.1 - 3.0) as f64 + 3.0) * 0.5) as f32
        );
    }

    #[test]
    fn scaling_keeps_values_in_their_range() {
        let ints = scaled(
            &Data::U32(vec![3, 255]),
            Some(Dist::Integers { lo: 3, hi: 255 }),
            0.5,
        );
        assert_eq!(data::from_bytes(DType::U32, &ints), Data::U32(vec![3, 129]));
        let floats = scaled(
            &Data::F32(vec![10.0]),
            Some(Dist::Uniform {
                lo: -10.0,
                hi: 10.0,
            }),
            0.75,
        );
        assert_eq!(data::from_bytes(DType::F32, &floats), Data::F32(vec![5.0]));
    }
}
