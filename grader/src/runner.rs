//! The one way cudabugs starts a subprocess (nvcc, the tools, a learner's program): its own process
//! group, a hard timeout, SIGTERM then SIGKILL to the whole group, and captured, size-capped output.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Bytes kept of each of stdout and stderr; the rest is counted and dropped.
pub const DEFAULT_OUTPUT_CAP: usize = 1 << 20;
/// How long a process group gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub struct Job {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Duration,
    pub output_cap: usize,
}

impl Job {
    pub fn new(program: impl Into<PathBuf>, timeout: Duration) -> Job {
        Job { program: program.into(), args: Vec::new(), cwd: None, env: Vec::new(), timeout, output_cap: DEFAULT_OUTPUT_CAP }
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
    let plain = !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c));
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
}

impl Finished {
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
    pub fn describe_exit(&self) -> String {
        match self.exit {
            Exit::Code(c) => format!("exit status {c}"),
            Exit::Signal(s) => format!("killed by signal {s}"),
            Exit::TimedOut => "timed out and was killed".into(),
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

fn drain(mut pipe: impl Read + Send + 'static, cap: usize) -> thread::JoinHandle<Captured> {
    thread::spawn(move || {
        let mut captured = Captured::default();
        let mut chunk = [0u8; 8192];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let keep = n.min(cap.saturating_sub(captured.bytes.len()));
                    captured.bytes.extend_from_slice(&chunk[..keep]);
                    captured.dropped += n - keep;
                }
            }
        }
        captured
    })
}

fn signal_group(pgid: u32, signal: i32) {
    // SAFETY: killpg only sends a signal; a group that no longer exists gives ESRCH, which we ignore.
    unsafe {
        libc::killpg(pgid as libc::pid_t, signal);
    }
}

/// The process groups of every job running now, so that an interrupted command (Ctrl-C in `watch`)
/// can take them all down with it: each job has its own group, which the terminal's SIGINT misses.
static LIVE_GROUPS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// Kill the process group of every running job (SIGTERM, a short grace, then SIGKILL). For a signal
/// handler that is about to exit the program.
pub fn kill_all_running() {
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

/// Run a job to completion or to its timeout. Only failing to start is an error: a crash, a signal
/// or a timeout is a `Finished` with the matching `Exit`.
pub fn run(job: &Job) -> Result<Finished, SpawnError> {
    let mut cmd = Command::new(&job.program);
    cmd.args(&job.args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    if let Some(dir) = &job.cwd {
        cmd.current_dir(dir);
    }
    for (k, v) in &job.env {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|source| SpawnError { program: job.program.display().to_string(), source })?;
    let pgid = child.id();
    if let Ok(mut g) = LIVE_GROUPS.lock() {
        g.push(pgid);
    }
    let out = drain(child.stdout.take().expect("piped"), job.output_cap);
    let err = drain(child.stderr.take().expect("piped"), job.output_cap);

    let (tx, rx) = mpsc::channel();
    let waiter = thread::spawn(move || {
        let status = child.wait();
        let _ = tx.send(());
        status
    });
    let timed_out = match rx.recv_timeout(job.timeout) {
        Ok(()) => false,
        Err(_) => {
            signal_group(pgid, libc::SIGTERM);
            if rx.recv_timeout(KILL_GRACE).is_err() {
                signal_group(pgid, libc::SIGKILL);
            }
            true
        }
    };
    let status = waiter.join().expect("waiter thread").ok();
    // Whatever the program left behind in its group (a daemonised child holding our pipes) goes too.
    signal_group(pgid, libc::SIGKILL);
    if let Ok(mut g) = LIVE_GROUPS.lock() {
        g.retain(|&p| p != pgid);
    }
    let (stdout, stderr) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
    let exit = match (timed_out, status) {
        (true, _) => Exit::TimedOut,
        (false, Some(s)) => match (s.code(), s.signal()) {
            (Some(c), _) => Exit::Code(c),
            (None, Some(sig)) => Exit::Signal(sig),
            _ => Exit::Code(-1),
        },
        (false, None) => Exit::Code(-1),
    };
    Ok(Finished { exit, stdout, stderr, wall: start.elapsed() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout: Duration) -> Finished {
        run(&Job::new("/bin/sh", timeout).arg("-c").arg(script)).unwrap()
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
        let mut job = Job::new("/bin/sh", Duration::from_secs(20)).arg("-c").arg("head -c 100000 /dev/zero");
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
        let script = format!("sh -c 'echo $$ > {}; sleep 60' & sleep 60", pidfile.display());
        let f = sh(&script, Duration::from_millis(500));
        assert_eq!(f.exit, Exit::TimedOut);
        assert!(f.wall < Duration::from_secs(10), "took {:?}", f.wall);
        // The grandchild shares our stdout pipe, so `run` returning at all means it has exited; it may
        // linger only as a zombie until init reaps it.
        // The kernel closes a dying process's files a moment before it becomes a zombie: allow it 2 s.
        let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(2);
        let (alive, state) = loop {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
            let alive = state.as_deref().is_some_and(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'));
            if !alive || Instant::now() > deadline {
                break (alive, state);
            }
            std::thread::yield_now();
        };
        assert!(!alive, "grandchild {pid} survived the group kill: {state:?}");
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
