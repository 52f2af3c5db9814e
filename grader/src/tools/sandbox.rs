//! The sandbox every piece of learner code runs in (the program, the tool that wraps it, nvcc on the
//! learner's file). Built in the forked child before `exec`, with raw system calls only (the grader is
//! multi-threaded, so nothing that allocates or locks may run there):
//!
//! ```text
//! grader ── monitor (process group of its own; waits, never execs)
//!             └─ init (pid 1 of new PID, mount and network namespaces, or a subreaper where
//!                  │    namespaces are not permitted; mounts the filesystem view, reaps, and kills
//!                  │    what the program leaves behind)
//!                  └─ the program (a session of its own)
//! ```
//!
//! Inside: the root filesystem is read-only, the run's work folders are writable, `hidden` folders
//! (the reference solutions, other submissions) are empty, `/proc` shows only the namespace, there is
//! no network (a new namespace has only a loopback that is down), and the grader is invisible: the
//! program's parent is pid 1, so `kill(getppid(), ...)` reaches nothing outside. When the program
//! exits, anything it left running gets a short grace, then is killed and counted. The monitor reports
//! the program's wait status and that count to the grader through a pipe.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::RawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

mod child;
mod raw;
mod view;

/// What the user asked for (`--isolation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// Process groups and timeouts only (the behaviour before the sandbox).
    None,
    /// The strongest level this machine permits.
    #[default]
    Auto,
    /// Namespaces or nothing: refuse to run learner code without them.
    Strict,
}

/// A word that names no `Isolation`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown isolation `{0}` (none, auto or strict)")]
pub struct UnknownIsolation(pub String);

impl std::str::FromStr for Isolation {
    type Err = UnknownIsolation;
    fn from_str(s: &str) -> Result<Isolation, UnknownIsolation> {
        match s {
            "none" => Ok(Isolation::None),
            "auto" => Ok(Isolation::Auto),
            "strict" => Ok(Isolation::Strict),
            _ => Err(UnknownIsolation(s.to_string())),
        }
    }
}

/// What was in force for a run, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// A process group and a timeout: a child that leaves the group escapes.
    ProcessGroup,
    /// A subreaper process catches whatever the program daemonises and kills it at the end; the
    /// filesystem, the network and the grader's processes are reachable.
    Subreaper,
    /// PID, mount, network and IPC namespaces (plus a user namespace when not root): the full
    /// sandbox.
    Namespaces,
}

impl Level {
    pub fn describe(self) -> &'static str {
        match self {
            Level::ProcessGroup => "process group only (no sandbox)",
            Level::Subreaper => "subreaper and process group (no namespaces on this machine: files, network and other processes are reachable)",
            Level::Namespaces => "PID, mount and network namespaces: read-only root, private work folder, no network",
        }
    }
}

/// Limits on a confined run. `None` leaves a resource unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Host memory of the whole run (cgroup `memory.max`), where a cgroup can be made. Never
    /// `RLIMIT_AS`: CUDA reserves terabytes of virtual address space.
    pub memory_bytes: Option<u64>,
    /// Processes and threads of the whole run (cgroup `pids.max`; `RLIMIT_NPROC` when not root).
    pub pids: Option<u64>,
    /// The largest file the run may write (`RLIMIT_FSIZE`; past it the writer gets SIGXFSZ).
    pub file_bytes: Option<u64>,
    /// After the program exits, how long what it left running may take to end by itself.
    pub grace: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            memory_bytes: None,
            pids: Some(4096),
            file_bytes: Some(4 << 30),
            grace: Duration::from_millis(500),
        }
    }
}

/// Where a confined run may write, what it must see and what it must not.
#[derive(Debug, Clone, Default)]
pub struct Confinement {
    /// Folders the run may write (its own run folder). Everything else is read-only.
    pub writable: Vec<PathBuf>,
    /// Of `writable`, the folders the grader made for this run: where the grader is root they
    /// become the sandbox user's. Never a folder of anyone else's (a program's own folder, where
    /// `sanitize` runs it, stays its owner's: the run can write there only if that user may).
    pub handed_over: Vec<PathBuf>,
    /// Folders it must see, read-only, even below a hidden folder (its binary's folder, below the
    /// hidden work folders) or below a folder its user cannot enter (a workbook under `/root`).
    pub readable: Vec<PathBuf>,
    /// Folders that look empty inside (reference solutions, other submissions' work folders).
    pub hidden: Vec<PathBuf>,
    /// Who the program runs as when the grader is root.
    pub user: SandboxUser,
    pub limits: Limits,
}

/// The user a confined program runs as when the grader runs as root: never root, never with a
/// capability. (A grader that is not root maps itself to root in a user namespace instead, with
/// every capability dropped before the program starts.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxUser {
    pub uid: u32,
    pub gid: u32,
}

impl Default for SandboxUser {
    /// `nobody`: on the GPU machines it ran CUDA programs, compute-sanitizer and ncu (where the
    /// driver lets every user read the counters).
    fn default() -> SandboxUser {
        SandboxUser {
            uid: 65534,
            gid: 65534,
        }
    }
}

/// Who a confined program is, decided once per run in the parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Identity {
    /// As the grader (process-group isolation: the behaviour before the sandbox).
    Unchanged,
    /// The grader is root: the program becomes this user, with no capability.
    Become(SandboxUser),
    /// The grader is not root: root of a user namespace, or itself outside namespaces, either way
    /// with no capability left.
    NoCapabilities,
}

/// How the monitor ended, as the grader reads it from the report pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetupReport {
    /// The program's raw wait status.
    pub wait_status: i32,
    /// Processes still running after the program exited and the grace passed (killed).
    pub leftovers: u32,
}

/// Setting up the sandbox failed in the child: which step, and errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetupFailure {
    pub step: SetupStep,
    pub errno: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum SetupStep {
    Cgroup = 1,
    Rlimit,
    Unshare,
    UserMap,
    Fork,
    MountPrivate,
    OpenWritable,
    ReadOnlyRoot,
    Hide,
    Bind,
    Proc,
    Chdir,
    Privileges,
    Seccomp,
}

impl SetupStep {
    fn from_u32(v: u32) -> Option<SetupStep> {
        use SetupStep::*;
        [
            Cgroup,
            Rlimit,
            Unshare,
            UserMap,
            Fork,
            MountPrivate,
            OpenWritable,
            ReadOnlyRoot,
            Hide,
            Bind,
            Proc,
            Chdir,
            Privileges,
            Seccomp,
        ]
        .into_iter()
        .find(|s| *s as u32 == v)
    }
    pub fn name(self) -> &'static str {
        match self {
            SetupStep::Cgroup => "joining the run's cgroup",
            SetupStep::Rlimit => "setting resource limits",
            SetupStep::Unshare => "creating namespaces",
            SetupStep::UserMap => "mapping the user namespace",
            SetupStep::Fork => "forking the sandbox's init",
            SetupStep::MountPrivate => "making mounts private",
            SetupStep::OpenWritable => "opening a folder to bind",
            SetupStep::ReadOnlyRoot => "making the root read-only",
            SetupStep::Hide => "hiding a folder",
            SetupStep::Bind => "binding a writable folder",
            SetupStep::Proc => "mounting /proc",
            SetupStep::Chdir => "entering the working folder",
            SetupStep::Privileges => "dropping the program's user and capabilities",
            SetupStep::Seccomp => "installing the system-call filter",
        }
    }
}

impl std::fmt::Display for SetupFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sandbox setup failed while {}: {}",
            self.step.name(),
            std::io::Error::from_raw_os_error(self.errno)
        )
    }
}

/// The report's wire format: fixed-size words, written once by the monitor or the init.
const MAGIC: u32 = 0xCB5A_0001;
const KIND_DONE: u32 = 1;
const KIND_SETUP_FAILED: u32 = 2;
const REPORT_LEN: usize = 20;

pub fn parse_report(bytes: &[u8]) -> Option<Result<SetupReport, SetupFailure>> {
    if bytes.len() < REPORT_LEN {
        return None;
    }
    let word = |i: usize| u32::from_ne_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap());
    if word(0) != MAGIC {
        return None;
    }
    match word(1) {
        KIND_DONE => Some(Ok(SetupReport {
            wait_status: word(2) as i32,
            leftovers: word(3),
        })),
        KIND_SETUP_FAILED => Some(Err(SetupFailure {
            step: SetupStep::from_u32(word(2))?,
            errno: word(3) as i32,
        })),
        _ => None,
    }
}

/// Everything the child needs, prepared before the fork (no allocation happens after it).
pub struct Prepared {
    level: Level,
    user_ns: bool,
    uid_map: CString,
    gid_map: CString,
    identity: Identity,
    /// The highest capability number this kernel knows (its bounding set is dropped up to it).
    cap_last: u32,
    filters: &'static [seccompiler::BpfProgram],
    cgroup_procs: Vec<CString>,
    rlimits: Vec<(libc::__rlimit_resource_t, u64)>,
    writable: Vec<CString>,
    /// Shown read-only where a hidden folder or a cover would hide them, parents first.
    readable: Vec<CString>,
    hidden: Vec<CString>,
    /// Folders above what the run needs that its user cannot enter (`/root`, mode 0700): an empty
    /// tmpfs each, with only the needed folders bound back in. Hidden after `hidden`.
    covers: Vec<CString>,
    /// Hidden files (an instructor's secret file): /dev/null bound over each.
    hidden_files: Vec<CString>,
    /// Folders to create inside a hidden folder's empty tmpfs, so that a writable folder below it
    /// can be bound back in; then the same inside the covers.
    mkdirs: Vec<CString>,
    cover_mkdirs: Vec<CString>,
    cwd: Option<CString>,
    dev_null: CString,
    grace_ns: u64,
    pub report_fd: RawFd,
    /// The grader's pid: the run dies with it (`PR_SET_PDEATHSIG`), and a run whose grader died
    /// before it could ask for that never starts.
    grader: libc::pid_t,
}

/// Most folders a run binds (readable and writable together): the child keeps their handles in a
/// fixed array.
const MAX_BINDS: usize = 48;

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap_or_else(|_| CString::new("/nonexistent").unwrap())
}

/// Whether `user` may pass through the folder `dir` (search permission), by its mode bits.
pub fn enterable(dir: &Path, user: SandboxUser) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::metadata(dir) else {
        return true;
    };
    let mode = m.mode();
    mode & 0o001 != 0
        || (m.uid() == user.uid && mode & 0o100 != 0)
        || (m.gid() == user.gid && mode & 0o010 != 0)
}

/// The highest folders above `needed` that `user` cannot enter: each gets an empty tmpfs with the
/// needed folders bound back, so that a workbook under `/root` is reachable and nothing else there.
fn covers_for(needed: &[&PathBuf], user: SandboxUser) -> Vec<PathBuf> {
    let mut covers: Vec<PathBuf> = Vec::new();
    for path in needed {
        let mut ancestors: Vec<&Path> = path.ancestors().skip(1).collect();
        ancestors.reverse();
        if let Some(top) = ancestors.into_iter().find(|a| !enterable(a, user)) {
            if !covers.iter().any(|c| top.starts_with(c)) {
                covers.retain(|c| !c.starts_with(top));
                covers.push(top.to_path_buf());
            }
        }
    }
    covers
}

/// The folders to make inside each of `over` (empty tmpfs) so that every one of `targets` below it
/// can be bound in: the path from just below the tmpfs down to the target, parents first.
fn paths_inside(targets: &[&PathBuf], over: &[PathBuf]) -> Vec<PathBuf> {
    let mut made = Vec::new();
    for t in targets {
        for h in over.iter().filter(|h| t.starts_with(h) && *t != *h) {
            let below: Vec<&Path> = t.ancestors().take_while(|a| a != h).collect();
            for p in below.into_iter().rev() {
                if !made.iter().any(|m: &PathBuf| m == p) {
                    made.push(p.to_path_buf());
                }
            }
        }
    }
    made
}

impl Prepared {
    pub fn new(
        level: Level,
        confine: &Confinement,
        cwd: Option<&Path>,
        cgroup_procs: &[PathBuf],
        report_fd: RawFd,
    ) -> Prepared {
        // SAFETY: getuid/getgid/geteuid cannot fail.
        let (uid, gid, root) = unsafe { (libc::getuid(), libc::getgid(), libc::geteuid() == 0) };
        let user_ns = level == Level::Namespaces && !root;
        let identity = match (level, root) {
            (Level::ProcessGroup, _) => Identity::Unchanged,
            (_, true) => Identity::Become(confine.user),
            (_, false) => Identity::NoCapabilities,
        };
        let rlimits = rlimits(&confine.limits, uid, !cgroup_procs.is_empty());
        let view = ViewPaths::new(level, identity, confine);
        let cap_last = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(40);
        let cstrs = |paths: &[PathBuf]| paths.iter().map(|p| cstr(p)).collect();
        Prepared {
            level,
            user_ns,
            uid_map: CString::new(format!("0 {uid} 1")).unwrap(),
            gid_map: CString::new(format!("0 {gid} 1")).unwrap(),
            identity,
            cap_last,
            filters: crate::tools::seccomp::filters(),
            cgroup_procs: cstrs(cgroup_procs),
            rlimits,
            writable: cstrs(&confine.writable),
            readable: cstrs(&view.readable),
            hidden: cstrs(&view.hidden_dirs),
            covers: cstrs(&view.covers),
            hidden_files: confine
                .hidden
                .iter()
                .filter(|h| h.is_file())
                .map(|p| cstr(p))
                .collect(),
            mkdirs: cstrs(&view.mkdirs),
            cover_mkdirs: cstrs(&view.cover_mkdirs),
            cwd: cwd.map(cstr),
            dev_null: CString::new("/dev/null").unwrap(),
            grace_ns: confine.limits.grace.as_nanos() as u64,
            report_fd,
            grader: std::process::id() as libc::pid_t,
        }
    }

    /// Before the fork, in the grader: where the grader is root, the folders it made for the run
    /// (and what is in them, never through a link) handed to the sandbox user, so that it can write
    /// there and nowhere else.
    pub fn hand_over(confine: &Confinement, level: Level) -> std::io::Result<()> {
        // SAFETY: geteuid cannot fail.
        if level == Level::ProcessGroup || unsafe { libc::geteuid() } != 0 {
            return Ok(());
        }
        let SandboxUser { uid, gid } = confine.user;
        for dir in confine
            .handed_over
            .iter()
            .filter(|d| confine.writable.contains(d))
        {
            own_tree(dir, uid, gid)?;
        }
        Ok(())
    }
}

/// The resource limits the child sets: no core files, the file size, and the process count where
/// no pids cgroup counts it.
fn rlimits(limits: &Limits, uid: u32, in_cgroup: bool) -> Vec<(libc::__rlimit_resource_t, u64)> {
    let mut rlimits = vec![(libc::RLIMIT_CORE, 0)];
    if let Some(b) = limits.file_bytes {
        rlimits.push((libc::RLIMIT_FSIZE, b));
    }
    // RLIMIT_NPROC counts every process of the user on the machine, and root ignores it: only
    // a fallback for a user without a pids cgroup.
    if let (Some(p), false) = (limits.pids, uid == 0 || in_cgroup) {
        rlimits.push((libc::RLIMIT_NPROC, p));
    }
    rlimits
}

/// The folders of the view the init mounts (`Prepared`'s fields of the same names), as paths.
struct ViewPaths {
    readable: Vec<PathBuf>,
    hidden_dirs: Vec<PathBuf>,
    covers: Vec<PathBuf>,
    mkdirs: Vec<PathBuf>,
    cover_mkdirs: Vec<PathBuf>,
}

impl ViewPaths {
    fn new(level: Level, identity: Identity, confine: &Confinement) -> ViewPaths {
        let namespaces = level == Level::Namespaces;
        let mut readable: Vec<PathBuf> = if namespaces {
            confine.readable.clone()
        } else {
            Vec::new()
        };
        readable.sort_by_key(|p| p.components().count());
        let writable = &confine.writable;
        let needed: Vec<&PathBuf> = readable.iter().chain(writable).collect();
        let hidden_dirs: Vec<PathBuf> = confine
            .hidden
            .iter()
            .filter(|h| h.is_dir())
            .cloned()
            .collect();
        let covers = match identity {
            Identity::Become(user) if namespaces => covers_for(&needed, user),
            _ => Vec::new(),
        };
        let (mkdirs, cover_mkdirs) = if namespaces {
            (
                paths_inside(&needed, &confine.hidden),
                paths_inside(&needed, &covers),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        assert!(
            readable.len() + writable.len() <= MAX_BINDS,
            "a run binds at most {MAX_BINDS} folders"
        );
        ViewPaths {
            readable,
            hidden_dirs,
            covers,
            mkdirs,
            cover_mkdirs,
        }
    }
}

/// `dir` and everything below it become `uid`'s, links themselves (never what they point to) and
/// nothing through a link: a program that left a link behind in its folder cannot make the grader
/// hand it a file elsewhere.
fn own_tree(dir: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    std::os::unix::fs::lchown(dir, Some(uid), Some(gid))?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if std::fs::symlink_metadata(&path)?.is_dir() {
                own_tree(&path, uid, gid)?;
            } else {
                std::os::unix::fs::lchown(&path, Some(uid), Some(gid))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writable_folder_below_a_hidden_one_gets_its_path_made_inside() {
        let confine = Confinement {
            writable: vec!["/w/.cudabugs/work/check/03-race/learner".into()],
            hidden: vec!["/w/.cudabugs/work".into(), "/w/solutions".into()],
            limits: Limits::default(),
            ..Confinement::default()
        };
        let p = Prepared::new(Level::Namespaces, &confine, None, &[], 9);
        let made: Vec<_> = p
            .mkdirs
            .iter()
            .map(|c| c.to_str().unwrap().to_string())
            .collect();
        assert_eq!(
            made,
            [
                "/w/.cudabugs/work/check",
                "/w/.cudabugs/work/check/03-race",
                "/w/.cudabugs/work/check/03-race/learner"
            ]
        );
    }

    #[test]
    fn reports_round_trip_and_garbage_is_none() {
        let mut buf = [0u8; REPORT_LEN];
        for (i, w) in [MAGIC, KIND_DONE, 9 << 8, 3, 0].iter().enumerate() {
            buf[i * 4..i * 4 + 4].copy_from_slice(&w.to_ne_bytes());
        }
        assert_eq!(
            parse_report(&buf),
            Some(Ok(SetupReport {
                wait_status: 9 << 8,
                leftovers: 3
            }))
        );
        assert_eq!(parse_report(&buf[..7]), None);
        assert_eq!(parse_report(&[0u8; REPORT_LEN]), None);
    }
}
