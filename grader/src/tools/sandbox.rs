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

impl std::str::FromStr for Isolation {
    type Err = String;
    fn from_str(s: &str) -> Result<Isolation, String> {
        match s {
            "none" => Ok(Isolation::None),
            "auto" => Ok(Isolation::Auto),
            "strict" => Ok(Isolation::Strict),
            _ => Err(format!("unknown isolation `{s}` (none, auto or strict)")),
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
pub struct Report {
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

pub fn parse_report(bytes: &[u8]) -> Option<Result<Report, SetupFailure>> {
    if bytes.len() < REPORT_LEN {
        return None;
    }
    let word = |i: usize| u32::from_ne_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap());
    if word(0) != MAGIC {
        return None;
    }
    match word(1) {
        KIND_DONE => Some(Ok(Report {
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
}

/// Most folders a run binds (readable and writable together): the child keeps their handles in a
/// fixed array.
const MAX_BINDS: usize = 48;

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap_or_else(|_| CString::new("/nonexistent").unwrap())
}

/// Whether `user` may pass through the folder `dir` (search permission), by its mode bits.
fn enterable(dir: &Path, user: SandboxUser) -> bool {
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
        let mut rlimits = vec![(libc::RLIMIT_CORE, 0)];
        if let Some(b) = confine.limits.file_bytes {
            rlimits.push((libc::RLIMIT_FSIZE, b));
        }
        // RLIMIT_NPROC counts every process of the user on the machine, and root ignores it: only
        // a fallback for a user without a pids cgroup.
        if let (Some(p), false) = (confine.limits.pids, uid == 0 || !cgroup_procs.is_empty()) {
            rlimits.push((libc::RLIMIT_NPROC, p));
        }
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
        let cap_last = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(40);
        Prepared {
            level,
            user_ns,
            uid_map: CString::new(format!("0 {uid} 1")).unwrap(),
            gid_map: CString::new(format!("0 {gid} 1")).unwrap(),
            identity,
            cap_last,
            filters: crate::tools::seccomp::filters(),
            cgroup_procs: cgroup_procs.iter().map(|p| cstr(p)).collect(),
            rlimits,
            writable: writable.iter().map(|p| cstr(p)).collect(),
            readable: readable.iter().map(|p| cstr(p)).collect(),
            hidden: hidden_dirs.iter().map(|p| cstr(p)).collect(),
            covers: covers.iter().map(|p| cstr(p)).collect(),
            hidden_files: confine
                .hidden
                .iter()
                .filter(|h| h.is_file())
                .map(|p| cstr(p))
                .collect(),
            mkdirs: mkdirs.iter().map(|p| cstr(p)).collect(),
            cover_mkdirs: cover_mkdirs.iter().map(|p| cstr(p)).collect(),
            cwd: cwd.map(cstr),
            dev_null: CString::new("/dev/null").unwrap(),
            grace_ns: confine.limits.grace.as_nanos() as u64,
            report_fd,
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

    /// Runs in the forked child, before `exec`. Returns only in the process that goes on to exec
    /// the program; the monitor and the init never return.
    ///
    /// # Safety
    /// Only async-signal-safe calls: this runs between `fork` and `exec` of a threaded process.
    pub unsafe fn enter(&self) -> std::io::Result<()> {
        let fail = |step: SetupStep| -> std::io::Result<()> {
            let errno = *libc::__errno_location();
            self.report(KIND_SETUP_FAILED, step as u32, errno as u32);
            Err(std::io::Error::from_raw_os_error(errno))
        };
        for procs in &self.cgroup_procs {
            if !write_file(procs, b"0") {
                return fail(SetupStep::Cgroup);
            }
        }
        for &(resource, value) in &self.rlimits {
            let lim = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            if libc::setrlimit(resource, &lim) != 0 {
                return fail(SetupStep::Rlimit);
            }
        }
        match self.level {
            Level::ProcessGroup => return Ok(()),
            Level::Subreaper => {
                if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
                    return fail(SetupStep::Unshare);
                }
            }
            Level::Namespaces => {
                // IPC too: System V shared memory and message queues outlive their process, and
                // a key is all another run (another student's) needs to find them.
                let mut flags = libc::CLONE_NEWNS
                    | libc::CLONE_NEWNET
                    | libc::CLONE_NEWPID
                    | libc::CLONE_NEWIPC;
                if self.user_ns {
                    flags |= libc::CLONE_NEWUSER;
                }
                if libc::unshare(flags) != 0 {
                    return fail(SetupStep::Unshare);
                }
                if self.user_ns
                    && !(write_file(c"/proc/self/setgroups", b"deny")
                        && write_file(c"/proc/self/uid_map", self.uid_map.as_bytes())
                        && write_file(c"/proc/self/gid_map", self.gid_map.as_bytes()))
                {
                    return fail(SetupStep::UserMap);
                }
            }
        }
        // The monitor: the grader's child. It only waits and passes the init's death on.
        let init = libc::fork();
        if init < 0 {
            return fail(SetupStep::Fork);
        }
        if init > 0 {
            self.quiet_fds();
            FORWARD_TO.store(init, std::sync::atomic::Ordering::SeqCst);
            forward_sigterm(true);
            let status = wait_for(init);
            // The init wrote the report; if it was killed, there is none and the grader says so.
            libc::_exit(if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                128 + libc::WTERMSIG(status)
            });
        }
        // The init: pid 1 of the new namespace, or the subreaper.
        if self.level == Level::Namespaces {
            if let Err(step) = self.mount_view() {
                let errno = *libc::__errno_location();
                self.report(KIND_SETUP_FAILED, step as u32, errno as u32);
                libc::_exit(127);
            }
        } else if let Some(cwd) = &self.cwd {
            libc::chdir(cwd.as_ptr());
        }
        let program = libc::fork();
        if program < 0 {
            self.report(
                KIND_SETUP_FAILED,
                SetupStep::Fork as u32,
                *libc::__errno_location() as u32,
            );
            libc::_exit(127);
        }
        if program == 0 {
            // The program. In namespaces it gets a session of its own, so that a signal to its
            // process group (`kill(0, ...)`) cannot reach the monitor and the init, which share the
            // grader's group for the timeout. Outside namespaces it must stay in that group, which
            // is how the timeout reaches it.
            if self.level == Level::Namespaces {
                libc::setsid();
            }
            if let Err(step) = self.drop_privileges() {
                self.report(
                    KIND_SETUP_FAILED,
                    step as u32,
                    *libc::__errno_location() as u32,
                );
                libc::_exit(127);
            }
            return Ok(());
        }
        self.quiet_fds();
        // SIGTERM from the grader (the timeout) goes on to the program's whole group.
        FORWARD_TO.store(
            if self.level == Level::Namespaces {
                -program
            } else {
                program
            },
            std::sync::atomic::Ordering::SeqCst,
        );
        forward_sigterm(self.level != Level::Namespaces);
        let status = wait_for(program);
        let leftovers = self.end_the_rest();
        self.report(KIND_DONE, status as u32, leftovers);
        libc::_exit(0)
    }

    /// The monitor and the init hold no pipe of the grader's but the report: std's exec-error pipe
    /// would keep `spawn` waiting, and stdout/stderr would keep the grader's readers open.
    unsafe fn quiet_fds(&self) {
        let null = libc::open(self.dev_null.as_ptr(), libc::O_RDWR);
        if null >= 0 {
            libc::dup2(null, 0);
            libc::dup2(null, 1);
            libc::dup2(null, 2);
        }
        let fd = self.report_fd as libc::c_uint;
        if fd > 3 {
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                fd - 1,
                0 as libc::c_uint,
            );
        }
        libc::syscall(
            libc::SYS_close_range,
            fd + 1,
            libc::c_uint::MAX,
            0 as libc::c_uint,
        );
    }

    /// After the program exited: give what it left running `grace` to end, then kill it. Returns
    /// how many processes were still running then.
    unsafe fn end_the_rest(&self) -> u32 {
        let deadline = monotonic_ns() + self.grace_ns;
        loop {
            reap_exited();
            let alive = self.others_alive();
            if alive == 0 {
                return 0;
            }
            if monotonic_ns() >= deadline {
                // Kill until none is left: a process may fork while it is being killed.
                for _ in 0..1000 {
                    self.kill_others();
                    reap_exited();
                    if self.others_alive() == 0 {
                        break;
                    }
                    sleep_ns(1_000_000);
                }
                return alive;
            }
            sleep_ns(10_000_000);
        }
    }

    /// Processes other than the init that are still alive: in a PID namespace every one of them;
    /// as a subreaper, its children (orphans are re-parented to it).
    unsafe fn others_alive(&self) -> u32 {
        if self.level == Level::Namespaces {
            // kill(-1, 0) reaches every process of the namespace but the init itself.
            return u32::from(libc::kill(-1, 0) == 0);
        }
        let mut count = 0;
        for_each_child(|_| count += 1);
        count
    }

    unsafe fn kill_others(&self) {
        if self.level == Level::Namespaces {
            libc::kill(-1, libc::SIGKILL);
        } else {
            for_each_child(|pid| {
                libc::kill(pid, libc::SIGKILL);
            });
        }
    }

    /// In the program, just before `exec`: no user of the grader's, no capability and no way to
    /// gain one (the bounding set empty, securebits locked so that root gets none at exec), then
    /// `no_new_privs` and the system-call filter.
    unsafe fn drop_privileges(&self) -> Result<(), SetupStep> {
        const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
        const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
        const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
        const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
        const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;
        #[repr(C)]
        struct CapHeader {
            version: u32,
            pid: libc::c_int,
        }
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct CapData {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        if self.identity == Identity::Unchanged {
            return Ok(());
        }
        // Root, or root of a user namespace: it holds the capabilities these calls need.
        if matches!(self.identity, Identity::Become(_)) || self.user_ns {
            for cap in 0..=self.cap_last {
                if libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) != 0
                    && *libc::__errno_location() != libc::EINVAL
                {
                    return Err(SetupStep::Privileges);
                }
            }
            let bits = SECBIT_NOROOT
                | SECBIT_NOROOT_LOCKED
                | SECBIT_KEEP_CAPS_LOCKED
                | SECBIT_NO_CAP_AMBIENT_RAISE
                | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
            if libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) != 0 {
                return Err(SetupStep::Privileges);
            }
        }
        if let Identity::Become(user) = self.identity {
            // Every user id leaves 0 at once: the kernel clears the permitted and effective sets.
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setresgid(user.gid, user.gid, user.gid) != 0
                || libc::setresuid(user.uid, user.uid, user.uid) != 0
            {
                return Err(SetupStep::Privileges);
            }
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        );
        let header = CapHeader {
            version: 0x2008_0522,
            pid: 0,
        };
        let none = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capset, &header as *const CapHeader, none.as_ptr()) != 0 {
            return Err(SetupStep::Privileges);
        }
        crate::tools::seccomp::install(self.filters).map_err(|errno| {
            *libc::__errno_location() = errno;
            SetupStep::Seccomp
        })
    }

    /// The filesystem the program sees. Runs in the init, inside the new namespaces.
    unsafe fn mount_view(&self) -> Result<(), SetupStep> {
        let null = std::ptr::null::<libc::c_char>();
        let bind = |source: &[u8; 32], target: &CString, flags: libc::c_ulong| {
            libc::mount(
                source.as_ptr().cast(),
                target.as_ptr(),
                null,
                libc::MS_BIND | flags,
                std::ptr::null(),
            ) == 0
        };
        // Nothing mounted here may propagate back to the machine.
        if libc::mount(
            null,
            c"/".as_ptr(),
            null,
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(SetupStep::MountPrivate);
        }
        // Handles on everything to bind back, before anything hides it: the readable folders, then
        // the writable ones.
        let mut fds = [-1; MAX_BINDS];
        for (i, p) in self
            .readable
            .iter()
            .chain(&self.writable)
            .take(MAX_BINDS)
            .enumerate()
        {
            fds[i] = libc::open(
                p.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            );
            if fds[i] < 0 {
                return Err(SetupStep::OpenWritable);
            }
        }
        // Every mount read-only, recursively (mount_setattr, Linux 5.12); else the root alone.
        #[repr(C)]
        struct MountAttr {
            attr_set: u64,
            attr_clr: u64,
            propagation: u64,
            userns_fd: u64,
        }
        const MOUNT_ATTR_RDONLY: u64 = 0x1;
        const AT_RECURSIVE: libc::c_int = 0x8000;
        let attr = MountAttr {
            attr_set: MOUNT_ATTR_RDONLY,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        };
        let r = libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c"/".as_ptr(),
            AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        );
        if r != 0
            && libc::mount(
                null,
                c"/".as_ptr(),
                null,
                libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY,
                std::ptr::null(),
            ) != 0
        {
            return Err(SetupStep::ReadOnlyRoot);
        }
        // An empty tmpfs over each of `over`, with the paths `inside` made in them (to the folders
        // below that must be seen), then read-only.
        let empty_over = |over: &[CString], inside: &[CString]| -> Result<(), SetupStep> {
            for at in over {
                if libc::mount(
                    c"tmpfs".as_ptr(),
                    at.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    c"size=64k,mode=755".as_ptr().cast(),
                ) != 0
                {
                    return Err(SetupStep::Hide);
                }
            }
            for d in inside {
                libc::mkdir(d.as_ptr(), 0o755);
            }
            for at in over {
                if libc::mount(
                    null,
                    at.as_ptr(),
                    null,
                    libc::MS_REMOUNT
                        | libc::MS_BIND
                        | libc::MS_RDONLY
                        | libc::MS_NOSUID
                        | libc::MS_NODEV,
                    std::ptr::null(),
                ) != 0
                {
                    return Err(SetupStep::Hide);
                }
            }
            Ok(())
        };
        // /dev/null over each hidden file, then the hidden folders.
        for f in &self.hidden_files {
            if libc::mount(
                self.dev_null.as_ptr(),
                f.as_ptr(),
                null,
                libc::MS_BIND,
                std::ptr::null(),
            ) != 0
            {
                return Err(SetupStep::Hide);
            }
        }
        empty_over(&self.hidden, &self.mkdirs)?;
        // Covers over what the sandbox user cannot enter, after the hidden folders (which may lie
        // below a cover: the readable folder bound back brings them along).
        empty_over(&self.covers, &self.cover_mkdirs)?;
        // The readable folders, parents first, with what is mounted below them (the hidden
        // folders' tmpfs): read-only, as their source is by now.
        let mut path = [0u8; 32];
        for (i, r) in self.readable.iter().enumerate() {
            fd_path(fds[i], &mut path);
            if !bind(&path, r, libc::MS_REC) {
                return Err(SetupStep::Bind);
            }
        }
        // The writable folders, bound back over themselves. A bind copies the source mount's
        // flags, read-only by now: remount it writable.
        let writable_at = self.readable.len();
        for (i, w) in self.writable.iter().enumerate() {
            fd_path(fds[writable_at + i], &mut path);
            if !bind(&path, w, 0)
                || libc::mount(
                    null,
                    w.as_ptr(),
                    null,
                    libc::MS_REMOUNT | libc::MS_BIND | libc::MS_NOSUID | libc::MS_NODEV,
                    std::ptr::null(),
                ) != 0
            {
                return Err(SetupStep::Bind);
            }
        }
        for fd in fds.iter().filter(|fd| **fd >= 0) {
            libc::close(*fd);
        }
        // A private /dev/shm (CUDA and the tools may use it) and a /proc of this namespace only.
        libc::mount(
            c"tmpfs".as_ptr(),
            c"/dev/shm".as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            c"size=256m,mode=1777".as_ptr().cast(),
        );
        if libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) != 0
        {
            return Err(SetupStep::Proc);
        }
        // The working folder again: the old handle points below the read-only root.
        if let Some(cwd) = &self.cwd {
            if libc::chdir(cwd.as_ptr()) != 0 {
                return Err(SetupStep::Chdir);
            }
        }
        Ok(())
    }

    unsafe fn report(&self, kind: u32, a: u32, b: u32) {
        let mut buf = [0u8; REPORT_LEN];
        for (i, w) in [MAGIC, kind, a, b, 0].iter().enumerate() {
            buf[i * 4..i * 4 + 4].copy_from_slice(&w.to_ne_bytes());
        }
        libc::write(self.report_fd, buf.as_ptr().cast(), buf.len());
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

// ---- Async-signal-safe helpers for the child.

static FORWARD_TO: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
/// The monitor passes on a SIGTERM from anyone (only the grader can reach it).
static SENDER_ANYWHERE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_sigterm(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // Only the grader's SIGTERM (from outside the namespace, where the sender has no pid here) is
    // passed on; a program that signals its own init gets nothing back.
    // SAFETY: the kernel hands the handler a valid siginfo.
    if unsafe { (*info).si_pid() } != 0
        && !SENDER_ANYWHERE.load(std::sync::atomic::Ordering::SeqCst)
    {
        return;
    }
    let to = FORWARD_TO.load(std::sync::atomic::Ordering::SeqCst);
    if to != 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(to, libc::SIGTERM) };
    }
}

unsafe fn forward_sigterm(from_anyone: bool) {
    SENDER_ANYWHERE.store(from_anyone, std::sync::atomic::Ordering::SeqCst);
    let mut action: libc::sigaction = std::mem::zeroed();
    action.sa_sigaction =
        on_sigterm as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize;
    action.sa_flags = libc::SA_SIGINFO;
    libc::sigemptyset(&mut action.sa_mask);
    libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
}

unsafe fn wait_for(pid: libc::pid_t) -> libc::c_int {
    let mut status = 0;
    loop {
        let r = libc::waitpid(-1, &mut status, 0);
        if r == pid {
            return status;
        }
        if r < 0 && *libc::__errno_location() != libc::EINTR {
            return 0;
        }
    }
}

unsafe fn reap_exited() {
    let mut status = 0;
    while libc::waitpid(-1, &mut status, libc::WNOHANG) > 0 {}
}

unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> bool {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return false;
    }
    let ok = libc::write(fd, bytes.as_ptr().cast(), bytes.len()) == bytes.len() as isize;
    libc::close(fd);
    ok
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn sleep_ns(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: nanosleep reads one timespec.
    unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
}

/// Write the decimal digits of `n` at `buf[at..]`; returns the index after them.
fn put_decimal(buf: &mut [u8], mut at: usize, n: u64) -> usize {
    let mut digits = [0u8; 20];
    let mut len = 0;
    let mut v = n;
    loop {
        digits[len] = b'0' + (v % 10) as u8;
        len += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for i in (0..len).rev() {
        buf[at] = digits[i];
        at += 1;
    }
    at
}

/// `/proc/self/fd/N`, NUL-terminated, in `buf`.
fn fd_path(fd: RawFd, buf: &mut [u8; 32]) {
    let prefix = b"/proc/self/fd/";
    buf[..prefix.len()].copy_from_slice(prefix);
    let end = put_decimal(buf, prefix.len(), fd as u64);
    buf[end] = 0;
}

/// Call `f` with the pid of each child of this (single-threaded) process, read from
/// `/proc/self/task/<pid>/children`.
unsafe fn for_each_child(mut f: impl FnMut(libc::pid_t)) {
    let mut path = [0u8; 64];
    let prefix = b"/proc/self/task/";
    path[..prefix.len()].copy_from_slice(prefix);
    let at = put_decimal(&mut path, prefix.len(), libc::getpid() as u64);
    let suffix = b"/children\0";
    path[at..at + suffix.len()].copy_from_slice(suffix);
    let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return;
    }
    let mut buf = [0u8; 4096];
    let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
    libc::close(fd);
    let mut pid: i64 = -1;
    for &c in &buf[..n.max(0) as usize] {
        if c.is_ascii_digit() {
            pid = pid.max(0) * 10 + (c - b'0') as i64;
        } else if pid >= 0 {
            f(pid as libc::pid_t);
            pid = -1;
        }
    }
    if pid >= 0 {
        f(pid as libc::pid_t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_and_fd_paths_are_written_without_allocating() {
        let mut buf = [0u8; 32];
        fd_path(1234, &mut buf);
        assert_eq!(&buf[..19], b"/proc/self/fd/1234\0");
        let mut b = [0u8; 8];
        assert_eq!(put_decimal(&mut b, 0, 0), 1);
        assert_eq!(b[0], b'0');
    }

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
            Some(Ok(Report {
                wait_status: 9 << 8,
                leftovers: 3
            }))
        );
        assert_eq!(parse_report(&buf[..7]), None);
        assert_eq!(parse_report(&[0u8; REPORT_LEN]), None);
    }
}
