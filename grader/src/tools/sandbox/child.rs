//! The sandbox's child side: what `Prepared::enter` does between `fork` and `exec`, phase by
//! phase, in the monitor, the init and the program. Async-signal-safe calls only (see sandbox.rs).

use super::raw::{for_each_child, monotonic_ns, reap_exited, sleep_ns, wait_for, write_file};
use super::{
    Identity, Level, Prepared, SetupStep, KIND_DONE, KIND_SETUP_FAILED, MAGIC, REPORT_LEN,
};

impl Prepared {
    /// Runs in the forked child, before `exec`. Returns only in the process that goes on to exec
    /// the program; the monitor and the init never return.
    ///
    /// # Safety
    /// Only async-signal-safe calls: this runs between `fork` and `exec` of a threaded process.
    pub unsafe fn enter(&self) -> std::io::Result<()> {
        // A grader killed outright (SIGKILL, or a node's OOM killer) cannot end its runs: each run
        // ends with it. The signal follows the thread that forked, which waits for the run.
        die_with_parent();
        if libc::getppid() != self.grader {
            libc::_exit(128 + libc::SIGKILL);
        }
        if let Err(step) = self.join_cgroup_and_limit() {
            return self.failed(step);
        }
        if self.level == Level::ProcessGroup {
            return Ok(());
        }
        if let Err(step) = self.isolate() {
            return self.failed(step);
        }
        // The monitor: the grader's child. It only waits and passes the init's death on.
        let init = libc::fork();
        if init < 0 {
            return self.failed(SetupStep::Fork);
        }
        if init > 0 {
            self.monitor(init);
        }
        self.init()
    }

    /// The run's cgroup joined, then its resource limits set.
    unsafe fn join_cgroup_and_limit(&self) -> Result<(), SetupStep> {
        for procs in &self.cgroup_procs {
            if !write_file(procs, b"0") {
                return Err(SetupStep::Cgroup);
            }
        }
        for &(resource, value) in &self.rlimits {
            let lim = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            if libc::setrlimit(resource, &lim) != 0 {
                return Err(SetupStep::Rlimit);
            }
        }
        Ok(())
    }

    /// Above a process group: a subreaper, or the new namespaces (the user namespace mapped).
    unsafe fn isolate(&self) -> Result<(), SetupStep> {
        if self.level == Level::Subreaper {
            if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
                return Err(SetupStep::Unshare);
            }
            return Ok(());
        }
        // IPC too: System V shared memory and message queues outlive their process, and
        // a key is all another run (another student's) needs to find them.
        let mut flags =
            libc::CLONE_NEWNS | libc::CLONE_NEWNET | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
        if self.user_ns {
            flags |= libc::CLONE_NEWUSER;
        }
        if libc::unshare(flags) != 0 {
            return Err(SetupStep::Unshare);
        }
        if self.user_ns
            && !(write_file(c"/proc/self/setgroups", b"deny")
                && write_file(c"/proc/self/uid_map", self.uid_map.as_bytes())
                && write_file(c"/proc/self/gid_map", self.gid_map.as_bytes()))
        {
            return Err(SetupStep::UserMap);
        }
        Ok(())
    }

    /// The monitor: waits for the init and exits as it did.
    unsafe fn monitor(&self, init: libc::pid_t) -> ! {
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

    /// The init: pid 1 of the new namespace, or the subreaper. Returns only in the program.
    unsafe fn init(&self) -> std::io::Result<()> {
        // And the init with the monitor: in namespaces, the kernel then ends every process of
        // the run (the init is their pid 1).
        die_with_parent();
        if self.level == Level::Namespaces {
            if let Err(step) = self.mount_view() {
                self.give_up(step);
            }
        } else if let Some(cwd) = &self.cwd {
            libc::chdir(cwd.as_ptr());
        }
        let program = libc::fork();
        if program < 0 {
            self.give_up(SetupStep::Fork);
        }
        if program == 0 {
            return self.program();
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

    /// The program. In namespaces it gets a session of its own, so that a signal to its
    /// process group (`kill(0, ...)`) cannot reach the monitor and the init, which share the
    /// grader's group for the timeout. Outside namespaces it must stay in that group, which
    /// is how the timeout reaches it.
    unsafe fn program(&self) -> std::io::Result<()> {
        if self.level == Level::Namespaces {
            libc::setsid();
        }
        if let Err(step) = self.drop_privileges() {
            self.give_up(step);
        }
        // Changing credentials cleared the setting: the program dies with its init too.
        die_with_parent();
        Ok(())
    }

    /// Report that `step` failed (with errno) and return its error, in the process the grader
    /// forked.
    unsafe fn failed(&self, step: SetupStep) -> std::io::Result<()> {
        let errno = self.report_failure(step);
        Err(std::io::Error::from_raw_os_error(errno))
    }

    /// Report that `step` failed (with errno) and exit, in the init or the program.
    unsafe fn give_up(&self, step: SetupStep) -> ! {
        self.report_failure(step);
        libc::_exit(127)
    }

    /// The setup failure report for `step`, with errno as the failed call left it; returns errno.
    unsafe fn report_failure(&self, step: SetupStep) -> i32 {
        let errno = *libc::__errno_location();
        self.report(KIND_SETUP_FAILED, step as u32, errno as u32);
        errno
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

    unsafe fn report(&self, kind: u32, a: u32, b: u32) {
        let mut buf = [0u8; REPORT_LEN];
        for (i, w) in [MAGIC, kind, a, b, 0].iter().enumerate() {
            buf[i * 4..i * 4 + 4].copy_from_slice(&w.to_ne_bytes());
        }
        libc::write(self.report_fd, buf.as_ptr().cast(), buf.len());
    }
}

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

/// SIGKILL to this process when the thread that forked it ends (`PR_SET_PDEATHSIG`).
unsafe fn die_with_parent() {
    libc::prctl(
        libc::PR_SET_PDEATHSIG,
        libc::SIGKILL as libc::c_ulong,
        0,
        0,
        0,
    );
}
