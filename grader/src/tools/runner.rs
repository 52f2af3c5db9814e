//! One file: a job, its one supervised run and what it finished with; 80 of its lines are tests.
//!
//! The one way cudabugs starts a subprocess (nvcc, the tools, a learner's program): its own process
//! group, a hard timeout, SIGTERM then SIGKILL to the whole group, captured and size-capped output,
//! and leak detection: after the program exits, whatever it left running gets a short grace, then
//! is killed (through the sandbox's init or the run's cgroup) and reported. A job that carries a
//! `Confinement` runs in the sandbox (`sandbox.rs`) at the level the launcher chose.

use std::ffi::OsString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::tools::cgroup::RunCgroup;
use crate::tools::gpu_memory::{GpuMemoryOver, GpuMemoryWatch};
use crate::tools::sandbox::{self, Confinement, Level, Prepared};

/// Bytes kept of each of stdout and stderr; the rest is counted and dropped.
pub const DEFAULT_OUTPUT_CAP: usize = 1 << 20;
/// How long a process group gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(2);
/// After the program exits, how long its output pipes may stay open before whoever holds them
/// counts as left running.
pub const PIPE_GRACE: Duration = Duration::from_millis(500);

#[derive(Debug, Clone)]
pub struct Job {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(OsString, OsString)>,
    /// Start from an empty environment: only `env` is passed on.
    pub clear_env: bool,
    pub timeout: Duration,
    pub output_cap: usize,
    /// Learner code: where it may write, what it must not see, its limits. The launcher decides
    /// the level; `None` runs the job as it is (the grader's own builds, version queries).
    pub confine: Option<Confinement>,
    /// The sandbox level this job runs at (set by the launcher for confined jobs).
    pub level: Option<Level>,
    /// A stable name for recordings ("03-race/learner/racecheck"): no paths, same on every machine.
    pub key: Option<String>,
    /// Files the job writes that the grader reads afterwards (a recording keeps them).
    pub outputs: Vec<PathBuf>,
    /// Descriptors of the grader's the program keeps, under their own numbers (the memory the
    /// grader shares for its timed calls). Every other descriptor is closed at exec.
    pub pass_fds: Vec<std::os::fd::RawFd>,
    /// Descriptors the grader holds open for the job (some of `pass_fds`: the case files a run
    /// reads through `/proc/self/fd`), closed when the last copy of the job goes.
    pub held: Vec<Arc<std::os::fd::OwnedFd>>,
    /// What the grader does beside the job while it runs (the timed calls' driver), in a thread of
    /// the runner's, from the spawn until the job ends.
    pub driver: Option<Arc<dyn Driver>>,
    /// While it shares the GPU with other runs: the GPU memory it may hold, read from the driver
    /// beside it. Over that, it is killed at once (`Finished::gpu_memory_over`).
    pub gpu_memory: Option<GpuMemoryWatch>,
}

/// Something the grader does with a job while it runs. Whatever it concludes it writes to the job's
/// output files, so that a recording keeps it and a replay serves it without running it.
pub trait Driver: Send + Sync + std::fmt::Debug {
    /// Before the job starts (again: a job may be run more than once).
    fn prepare(&self) {}
    fn drive(&self, run: &Running) -> Then;
}

/// What the runner does with a job once its driver is done with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    /// Let it end by itself, within its time.
    Wait,
    /// End it now (SIGTERM, SIGKILL after the grace): the driver found it broken, and a program
    /// that hangs after that must not hold the grader to its time limit.
    Stop,
    /// End it now as out of time (its `Exit::TimedOut`), before its own limit: the runs it is
    /// measured against set a shorter one (`engine::pace`).
    OutOfTime,
}

/// What the runner hears while a job runs.
enum Heard {
    Exited,
    Stop,
    OutOfTime,
    /// Over its share of the GPU's memory: no grace, so that it frees the memory at once.
    Kill,
}

/// A job in progress, as its driver sees it.
pub struct Running<'a> {
    alive: &'a std::sync::atomic::AtomicBool,
    pub started: Instant,
    pub deadline: Instant,
    /// The run's cgroup, where it has one: its processes and their CPU time.
    pub cgroup: Option<&'a RunCgroup>,
}

impl Running<'_> {
    /// Whether the job's process is still running.
    pub fn alive(&self) -> bool {
        self.alive.load(std::sync::atomic::Ordering::Acquire)
    }
}

impl Job {
    pub fn new(program: impl Into<PathBuf>, timeout: Duration) -> Job {
        Job {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            clear_env: false,
            timeout,
            output_cap: DEFAULT_OUTPUT_CAP,
            confine: None,
            level: None,
            key: None,
            outputs: Vec::new(),
            pass_fds: Vec::new(),
            held: Vec::new(),
            driver: None,
            gpu_memory: None,
        }
    }
    pub fn arg(mut self, a: impl Into<OsString>) -> Job {
        self.args.push(a.into());
        self
    }
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, items: I) -> Job {
        self.args.extend(items.into_iter().map(Into::into));
        self
    }
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Job {
        self.cwd = Some(dir.into());
        self
    }
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Job {
        self.env.push((key.into(), value.into()));
        self
    }
    pub fn confine(mut self, c: Confinement) -> Job {
        self.confine = Some(c);
        self
    }
    pub fn key(mut self, k: impl Into<String>) -> Job {
        self.key = Some(k.into());
        self
    }
    pub fn output(mut self, p: impl Into<PathBuf>) -> Job {
        self.outputs.push(p.into());
        self
    }
    /// The command line as a person would type it (for reports and the book).
    pub fn display(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().map(|a| a.to_string_lossy().into_owned()))
            .map(|w| shell_word(&w))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A word quoted so that a shell reads it back unchanged.
fn shell_word(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

/// Captured output: the first `cap` bytes, and how many were dropped after them.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    pub bytes: Vec<u8>,
    pub dropped: usize,
}

impl Captured {
    pub fn text(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.bytes).into_owned();
        if self.dropped > 0 {
            s.push_str(&format!("\n[... {} more bytes not kept]\n", self.dropped));
        }
        s
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    /// Killed by the runner after its timeout.
    TimedOut,
}

#[derive(Debug, Clone)]
pub struct Finished {
    pub exit: Exit,
    pub stdout: Captured,
    pub stderr: Captured,
    pub wall: Duration,
    /// Processes the program left running when it exited; they were killed after the grace.
    pub leftovers: usize,
    /// Something it left running still held the output pipes and could not be killed (no sandbox
    /// and no cgroup to find it): the grader stopped reading instead of waiting for it.
    pub escaped: bool,
    /// The run's memory limit was hit and the kernel killed a process of it.
    pub oom_killed: bool,
    /// It held more GPU memory than a run that shares the GPU may (`Job::gpu_memory`).
    pub gpu_memory_over: Option<GpuMemoryOver>,
    /// The sandbox level the job ran at; None for an unconfined job.
    pub isolation: Option<Level>,
}

impl Finished {
    /// A run that ended with `exit` after `wall`, printed nothing and left nothing: what the
    /// judges' tests hand them.
    #[cfg(test)]
    pub fn ended(exit: Exit, wall: Duration) -> Finished {
        Finished {
            exit,
            stdout: Captured::default(),
            stderr: Captured::default(),
            wall,
            leftovers: 0,
            escaped: false,
            oom_killed: false,
            gpu_memory_over: None,
            isolation: None,
        }
    }

    pub fn success(&self) -> bool {
        self.exit == Exit::Code(0)
    }
    /// stdout and stderr together, for error messages.
    pub fn output(&self) -> String {
        let (out, err) = (self.stdout.text(), self.stderr.text());
        match (out.trim().is_empty(), err.trim().is_empty()) {
            (true, _) => err,
            (_, true) => out,
            _ => format!("{out}\n{err}"),
        }
    }
    /// Why it was killed for the memory it held, where it was: over its host-memory limit (the
    /// kernel's kill), or over its share of a shared GPU's (the runner's).
    pub fn killed_for_memory(&self) -> Option<String> {
        if self.exit != Exit::Signal(libc::SIGKILL) {
            return None;
        }
        if self.oom_killed {
            return Some("killed: it went over its host-memory limit".into());
        }
        self.gpu_memory_over.map(|o| o.describe())
    }

    pub fn describe_exit(&self) -> String {
        let mut s = match (self.killed_for_memory(), self.exit) {
            (Some(why), _) => why,
            (None, Exit::Code(c)) => format!("exit status {c}"),
            (None, Exit::Signal(s)) if s == libc::SIGXFSZ => {
                "killed by SIGXFSZ: it wrote a file over the size limit".into()
            }
            (None, Exit::Signal(s)) => format!("killed by signal {s}"),
            (None, Exit::TimedOut) => "timed out and was killed".into(),
        };
        if let Some(left) = self.left_running() {
            s.push_str(&format!("; {left}"));
        }
        s
    }
    /// "left 2 processes running (killed)" where it did.
    pub fn left_running(&self) -> Option<String> {
        match (self.leftovers, self.escaped) {
            (_, true) => Some("left a process running that still held its output and could not be killed (no sandbox)".into()),
            (0, false) => None,
            (1, false) => Some("left a process running after it exited (killed)".into()),
            (n, false) => Some(format!("left {n} processes running after it exited (killed)")),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot start {program}: {source}")]
pub struct SpawnError {
    pub program: String,
    #[source]
    pub source: std::io::Error,
}

/// A reader thread's output so far, readable while the thread is still blocked on the pipe.
type Shared = Arc<Mutex<Captured>>;

fn drain(mut pipe: impl Read + Send + 'static, cap: usize, done: mpsc::Sender<()>) -> Shared {
    let shared: Shared = Arc::default();
    let out = shared.clone();
    thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let mut c = out.lock().unwrap();
                    let keep = n.min(cap.saturating_sub(c.bytes.len()));
                    c.bytes.extend_from_slice(&chunk[..keep]);
                    c.dropped += n - keep;
                }
            }
        }
        let _ = done.send(());
    });
    shared
}

fn signal_group(pgid: u32, signal: i32) {
    // SAFETY: killpg only sends a signal; a group that no longer exists gives ESRCH, which we ignore.
    unsafe {
        libc::killpg(pgid as libc::pid_t, signal);
    }
}

/// The process groups of every job running now, so that an interrupted command (Ctrl-C in `watch`)
/// can take them all down with it: each job has its own group, which the terminal's SIGINT misses.
static LIVE_GROUPS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// What this thread starts from now on runs in the background: this thread, the threads it
/// starts and every process they spawn get the lowest CPU priority (nice 19; on Linux the nice
/// value is a thread's, and threads and children inherit it). For work done while a program is
/// timed on the same host, such as building the next chunk: a burst of nvcc on every core made the
/// first timed call of each chunk of a class 1.3-2x slower on an H200 (0.99-1.99 s against
/// 0.5-1.1 s), and its doubt cost a round of confirming calls. Returns whether it took.
pub fn into_background() -> bool {
    // SAFETY: a plain syscall on this thread (`gettid`, then `setpriority` of that thread).
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 19) == 0
    }
}

/// Set once `kill_all_running` starts: whatever a job reports after that was the interruption, not
/// the learner's code.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the command is being interrupted (Ctrl-C).
pub fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Kill the process group of every running job (SIGTERM, a short grace, then SIGKILL). For a signal
/// handler that is about to exit the program.
pub fn kill_all_running() {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
    let groups: Vec<u32> = LIVE_GROUPS.lock().map(|g| g.clone()).unwrap_or_default();
    for &g in &groups {
        signal_group(g, libc::SIGTERM);
    }
    let deadline = Instant::now() + KILL_GRACE;
    while Instant::now() < deadline && groups.iter().any(|&g| group_alive(g)) {
        thread::sleep(Duration::from_millis(20));
    }
    for &g in &groups {
        signal_group(g, libc::SIGKILL);
    }
}

/// How many jobs are running now.
pub fn running_jobs() -> usize {
    LIVE_GROUPS.lock().map(|g| g.len()).unwrap_or(0)
}

fn group_alive(pgid: u32) -> bool {
    // SAFETY: signal 0 only checks that the group exists.
    unsafe { libc::killpg(pgid as libc::pid_t, 0) == 0 }
}

/// The read and write ends of the sandbox's report pipe, close-on-exec (the program never sees it).
fn report_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors, which we own from here on.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Run a job to completion or to its timeout. Only failing to start is an error (the sandbox's
/// setup included): a crash, a signal or a timeout is a `Finished` with the matching `Exit`.
pub fn run(job: &Job) -> Result<Finished, SpawnError> {
    when_not_busy(|| run_once(job))
}

/// `start()` again, from the beginning (a fresh sandbox), while it fails because the program is
/// open for writing (ETXTBSY): after 5 ms, then twice as long each time, 1.3 s in all. A binary
/// just copied into place stays open for writing, for a moment, in every child another thread of
/// the grader forked before the copy closed it, until that child execs (rust-lang/rust#114554): on
/// an H200, one chunk in 45 of a one-student catalog grade lost its reference fix's run to it, a
/// different chunk each time (book/gpu-runs/2026-12-02-beside-50/).
fn when_not_busy<T>(mut start: impl FnMut() -> Result<T, SpawnError>) -> Result<T, SpawnError> {
    let mut wait = Duration::from_millis(5);
    loop {
        match start() {
            Err(e)
                if e.source.raw_os_error() == Some(libc::ETXTBSY)
                    && wait < Duration::from_secs(1) =>
            {
                thread::sleep(wait);
                wait *= 2;
            }
            started => return started,
        }
    }
}

/// One attempt of `run`.
fn run_once(job: &Job) -> Result<Finished, SpawnError> {
    let spawn_error = |source| SpawnError {
        program: job.program.display().to_string(),
        source,
    };
    let mut cmd = command(job);
    let level = job
        .confine
        .as_ref()
        .map(|_| job.level.unwrap_or(Level::ProcessGroup));
    let (cgroup, report) = confine(job, level, &mut cmd).map_err(spawn_error)?;
    keep_passed_fds(&mut cmd, &job.pass_fds);
    if let Some(d) = &job.driver {
        d.prepare();
    }
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(spawn_error)?;
    // Our copy of the write end goes, so that only the sandbox's monitor and init hold it.
    let report = report.map(|(read, _write)| read);
    let pgid = child.id();
    if let Ok(mut g) = LIVE_GROUPS.lock() {
        g.push(pgid);
    }
    let (pipes_done, pipes_closed) = mpsc::channel();
    let out = drain(
        child.stdout.take().expect("piped"),
        job.output_cap,
        pipes_done.clone(),
    );
    let err = drain(
        child.stderr.take().expect("piped"),
        job.output_cap,
        pipes_done,
    );
    let (timed_out, status, gpu_memory_over) =
        supervise(job, &mut child, pgid, start, cgroup.as_ref());
    // Whatever is left in the group (the sandbox's init after a timeout, a child that stayed in the
    // group) goes too.
    signal_group(pgid, libc::SIGKILL);
    if let Ok(mut g) = LIVE_GROUPS.lock() {
        g.retain(|&p| p != pgid);
    }
    let sandbox_report = report.as_ref().and_then(read_report);
    if let Some(Err(failure)) = sandbox_report {
        return Err(spawn_error(std::io::Error::other(failure.to_string())));
    }
    // The sandbox's init counted and killed what the program left; the cgroup catches anything
    // that got past it (and is the only net when the level has no init).
    let mut leftovers = match sandbox_report {
        Some(Ok(r)) => r.leftovers as usize,
        _ => 0,
    };
    if let Some(cg) = &cgroup {
        let stray = cg.kill_all(KILL_GRACE);
        leftovers = leftovers.max(stray);
    }
    let escaped = pipes_held_open(&pipes_closed);
    let (stdout, stderr) = (out.lock().unwrap().clone(), err.lock().unwrap().clone());
    let oom_killed = cgroup.as_ref().is_some_and(RunCgroup::oom_killed);
    drop(cgroup);
    Ok(Finished {
        exit: exit_of(timed_out, sandbox_report, status),
        stdout,
        stderr,
        wall: start.elapsed(),
        leftovers,
        escaped,
        oom_killed,
        gpu_memory_over,
        isolation: level,
    })
}

/// The job's command line, environment and folder: its own process group, no stdin, both outputs
/// piped.
fn command(job: &Job) -> Command {
    let mut cmd = Command::new(&job.program);
    cmd.args(&job.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(dir) = &job.cwd {
        cmd.current_dir(dir);
    }
    if job.clear_env {
        cmd.env_clear();
    }
    for (k, v) in &job.env {
        cmd.env(k, v);
    }
    cmd
}

/// The sandbox's report pipe, read and write ends.
type ReportPipe = (OwnedFd, OwnedFd);

/// Where the job is confined above a process group: its folders handed over, its cgroup made and
/// the sandbox entered in the child before exec. Returns the cgroup (where one could be made) and
/// the report pipe; neither for a job that is not confined that far.
fn confine(
    job: &Job,
    level: Option<Level>,
    cmd: &mut Command,
) -> std::io::Result<(Option<RunCgroup>, Option<ReportPipe>)> {
    let (Some(confine), Some(level)) = (&job.confine, level.filter(|l| *l > Level::ProcessGroup))
    else {
        return Ok((None, None));
    };
    Prepared::hand_over(confine, level)?;
    let cgroup = RunCgroup::create(confine.limits.memory_bytes, confine.limits.pids);
    let procs = cgroup
        .as_ref()
        .map(RunCgroup::procs_files)
        .unwrap_or_default();
    let (read, write) = report_pipe()?;
    let prepared = Prepared::new(
        level,
        confine,
        job.cwd.as_deref(),
        &procs,
        write.as_raw_fd(),
    );
    // SAFETY: `enter` makes only async-signal-safe calls (see sandbox/child.rs).
    unsafe {
        cmd.pre_exec(move || prepared.enter());
    }
    Ok((cgroup, Some((read, write))))
}

/// The descriptors the program keeps (`Job::pass_fds`) lose close-on-exec in the child.
fn keep_passed_fds(cmd: &mut Command, pass_fds: &[RawFd]) {
    if pass_fds.is_empty() {
        return;
    }
    let fds = pass_fds.to_vec();
    // SAFETY: fcntl is async-signal-safe. Registered after the sandbox's, this runs in the
    // program only (the sandbox's monitor and init never return to it).
    unsafe {
        cmd.pre_exec(move || {
            for &fd in &fds {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// Wait for the job to exit, with its driver and its GPU memory watch beside it in threads, and end
/// its group at its deadline, when the driver says stop, or at once when it holds more GPU memory
/// than its share. Returns whether it timed out, its status, and what it held over its share.
fn supervise(
    job: &Job,
    child: &mut Child,
    pgid: u32,
    start: Instant,
    cgroup: Option<&RunCgroup>,
) -> (bool, Option<ExitStatus>, Option<GpuMemoryOver>) {
    let (tx, rx) = mpsc::channel();
    let alive = std::sync::atomic::AtomicBool::new(true);
    let running = Running {
        alive: &alive,
        started: start,
        deadline: start + job.timeout,
        cgroup,
    };
    thread::scope(|scope| {
        let exited = tx.clone();
        let alive = &alive;
        let waiter = scope.spawn(move || {
            let status = child.wait();
            alive.store(false, std::sync::atomic::Ordering::Release);
            let _ = exited.send(Heard::Exited);
            status
        });
        let driver = job.driver.as_ref().map(|d| {
            let stop = tx.clone();
            let running = &running;
            scope.spawn(move || match d.drive(running) {
                Then::Wait => {}
                Then::Stop => {
                    let _ = stop.send(Heard::Stop);
                }
                Then::OutOfTime => {
                    let _ = stop.send(Heard::OutOfTime);
                }
            })
        });
        let watch = job.gpu_memory.as_ref().map(|w| {
            let kill = tx.clone();
            let running = &running;
            scope.spawn(move || {
                let over = watch_gpu_memory(w, running, pgid);
                if over.is_some() {
                    let _ = kill.send(Heard::Kill);
                }
                over
            })
        });
        let timed_out =
            match rx.recv_timeout(running.deadline.saturating_duration_since(Instant::now())) {
                Ok(Heard::Exited) => false,
                Ok(Heard::Stop) => {
                    end_group(pgid, &rx, KILL_GRACE);
                    false
                }
                Ok(Heard::Kill) => {
                    signal_group(pgid, libc::SIGKILL);
                    if let Some(cg) = cgroup {
                        cg.kill_all(Duration::from_millis(500));
                    }
                    false
                }
                Ok(Heard::OutOfTime) | Err(_) => {
                    end_group(pgid, &rx, KILL_GRACE);
                    true
                }
            };
        let status = waiter.join().expect("waiter thread").ok();
        if let Some(d) = driver {
            let _ = d.join();
        }
        let over = watch.and_then(|w| w.join().ok().flatten());
        (timed_out, status, over)
    })
}

/// Reads what the run's processes hold (its cgroup's, else its process group leader's: a program
/// outside a cgroup can hide a child from the watch) every `gpu_memory::POLL`, until it ends or
/// holds more than its share.
fn watch_gpu_memory(watch: &GpuMemoryWatch, run: &Running, pgid: u32) -> Option<GpuMemoryOver> {
    while run.alive() {
        thread::sleep(crate::tools::gpu_memory::POLL);
        let pids = match run.cgroup {
            Some(cg) => cg.pids(),
            None => vec![pgid as i32],
        };
        if let Some(over) = watch.over(&pids) {
            return run.alive().then_some(over);
        }
    }
    None
}

/// SIGTERM to the group, then SIGKILL if the job has not exited within `grace` (a driver's second
/// stop does not cut the grace short).
fn end_group(pgid: u32, heard: &mpsc::Receiver<Heard>, grace: Duration) {
    signal_group(pgid, libc::SIGTERM);
    let exited = loop {
        match heard.recv_timeout(grace) {
            Ok(Heard::Exited) => break true,
            Ok(Heard::Stop | Heard::OutOfTime | Heard::Kill) => continue,
            Err(_) => break false,
        }
    };
    if !exited {
        signal_group(pgid, libc::SIGKILL);
    }
}

/// What the sandbox's monitor or init wrote to the report pipe, if anything.
fn read_report(read: &OwnedFd) -> Option<Result<sandbox::SetupReport, sandbox::SetupFailure>> {
    let mut buf = [0u8; 64];
    // SAFETY: a non-blocking read into a local buffer; the init wrote before the monitor ended.
    let n = unsafe { libc::read(read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    sandbox::parse_report(&buf[..n.max(0) as usize])
}

/// The pipes close when the last holder is gone. One still open after the grace is held by a
/// process nothing could find: stop reading rather than wait for it.
fn pipes_held_open(pipes_closed: &mpsc::Receiver<()>) -> bool {
    let deadline = Instant::now() + PIPE_GRACE;
    for _ in 0..2 {
        if pipes_closed
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .is_err()
        {
            return true;
        }
    }
    false
}

/// The job's exit: a timeout first, then the program's status as the sandbox reported it, then
/// as `wait` saw it.
fn exit_of(
    timed_out: bool,
    sandbox_report: Option<Result<sandbox::SetupReport, sandbox::SetupFailure>>,
    status: Option<ExitStatus>,
) -> Exit {
    let from_status = |s: ExitStatus| match (s.code(), s.signal()) {
        (Some(c), _) => Exit::Code(c),
        (None, Some(sig)) => Exit::Signal(sig),
        _ => Exit::Code(-1),
    };
    match (timed_out, sandbox_report, status) {
        (true, _, _) => Exit::TimedOut,
        (false, Some(Ok(r)), _) => from_status(ExitStatus::from_raw(r.wait_status)),
        (false, _, Some(s)) => from_status(s),
        (false, _, None) => Exit::Code(-1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program still open for writing fails to start with ETXTBSY (as a binary copied into place
    /// does while another thread forks); `run` starts it again once it is closed, and gives up at
    /// once on any other failure to start.
    #[test]
    fn a_program_busy_being_written_is_started_again_once_closed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("busy.sh");
        std::fs::write(&script, "#!/bin/sh\necho started\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let job = Job::new(&script, Duration::from_secs(10));
        let mut writer = Some(
            std::fs::OpenOptions::new()
                .append(true)
                .open(&script)
                .unwrap(),
        );
        let mut errors = Vec::new();
        let finished = when_not_busy(|| {
            let tried = run_once(&job);
            errors.extend(tried.as_ref().err().map(|e| e.source.raw_os_error()));
            writer = None;
            tried
        })
        .unwrap();
        // The first start, with the file held open here, fails; a later one may too, while a
        // child another test forked still holds it (the race this retry is for).
        assert!(!errors.is_empty(), "the first start found the program busy");
        assert!(
            errors.iter().all(|e| *e == Some(libc::ETXTBSY)),
            "{errors:?}"
        );
        assert_eq!(finished.stdout.text().trim(), "started");
        let missing = Job::new(dir.path().join("missing"), Duration::from_secs(10));
        let mut tries = 0;
        assert!(when_not_busy(|| {
            tries += 1;
            run_once(&missing)
        })
        .is_err());
        assert_eq!(tries, 1);
    }

    fn sh(script: &str, timeout: Duration) -> Finished {
        run(&Job::new("/bin/sh", timeout).arg("-c").arg(script)).unwrap()
    }

    #[test]
    fn a_thread_sent_to_the_background_spawns_its_programs_at_the_lowest_priority() {
        let niceness = |background: bool| {
            std::thread::spawn(move || {
                if background {
                    assert!(into_background());
                }
                let f = sh("nice", Duration::from_secs(10));
                f.stdout.text().trim().to_string()
            })
            .join()
            .unwrap()
        };
        assert_eq!(niceness(true), "19");
        // SAFETY: a plain syscall.
        let own = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        assert_eq!(
            niceness(false),
            own.to_string(),
            "other threads keep theirs"
        );
    }

    #[test]
    fn a_run_over_its_gpu_memory_share_is_killed_at_once_and_one_within_it_is_not() {
        use crate::tools::gpu_memory::GpuMemoryWatch;
        // What the driver would count: 2 GiB for the run's process (the group leader, outside a
        // cgroup), read through the same watch as NVML's.
        let watched = |share: u64| {
            let mut job = Job::new("/bin/sh", Duration::from_secs(30))
                .arg("-c")
                .arg("trap '' TERM; sleep 20; echo done");
            job.gpu_memory = Some(GpuMemoryWatch::with_source(
                share,
                16 << 30,
                Arc::new(|pids: &[i32]| Some(pids.len() as u64 * (2 << 30))),
            ));
            job
        };
        let f = run(&watched(1 << 30)).unwrap();
        assert_eq!(f.exit, Exit::Signal(libc::SIGKILL), "{f:?}");
        assert!(
            f.wall < Duration::from_secs(5),
            "killed without a grace: {:?}",
            f.wall
        );
        let over = f.gpu_memory_over.expect("what it held is kept");
        assert_eq!((over.held, over.share), (2 << 30, 1 << 30));
        assert!(
            f.describe_exit()
                .starts_with("killed: it held 2.0 GiB of the GPU's 16.0 GiB"),
            "{}",
            f.describe_exit()
        );

        let mut within = watched(4 << 30);
        within.args = vec!["-c".into(), "sleep 0.5; echo done".into()];
        let f = run(&within).unwrap();
        assert_eq!(
            (f.exit, f.stdout.text().as_str()),
            (Exit::Code(0), "done\n")
        );
        assert_eq!(f.gpu_memory_over, None);
    }

    #[test]
    fn captures_both_streams_and_the_exit_code() {
        let f = sh("echo out; echo err >&2; exit 7", Duration::from_secs(10));
        assert_eq!(f.exit, Exit::Code(7));
        assert_eq!(f.stdout.text(), "out\n");
        assert_eq!(f.stderr.text(), "err\n");
    }

    #[test]
    fn caps_huge_output_and_counts_the_rest() {
        let mut job = Job::new("/bin/sh", Duration::from_secs(20))
            .arg("-c")
            .arg("head -c 100000 /dev/zero");
        job.output_cap = 1000;
        let f = run(&job).unwrap();
        assert_eq!((f.stdout.bytes.len(), f.stdout.dropped), (1000, 99000));
        assert!(f.stdout.text().contains("99000 more bytes"));
    }

    #[test]
    fn kills_the_whole_group_on_timeout() {
        // The grandchild writes its pid, then everything sleeps past the timeout.
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!(
            "sh -c 'echo $$ > {}; sleep 60' & sleep 60",
            pidfile.display()
        );
        let f = sh(&script, Duration::from_millis(500));
        assert_eq!(f.exit, Exit::TimedOut);
        assert!(f.wall < Duration::from_secs(10), "took {:?}", f.wall);
        // The grandchild shares our stdout pipe, so `run` returning at all means it has exited; it may
        // linger only as a zombie until init reaps it.
        // The kernel closes a dying process's files a moment before it becomes a zombie: allow it 2 s.
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(2);
        let (alive, state) = loop {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
            let alive = state.as_deref().is_some_and(|s| {
                !s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            });
            if !alive || Instant::now() > deadline {
                break (alive, state);
            }
            std::thread::yield_now();
        };
        assert!(
            !alive,
            "grandchild {pid} survived the group kill: {state:?}"
        );
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let e = run(&Job::new("/nonexistent/prog", Duration::from_secs(1))).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/prog"));
    }

    #[test]
    fn reports_a_signal() {
        let f = sh("kill -SEGV $$", Duration::from_secs(10));
        assert_eq!(f.exit, Exit::Signal(libc::SIGSEGV));
    }
}
