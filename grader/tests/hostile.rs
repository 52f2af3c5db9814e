//! One file: one hostile program per test, all run through the same launcher, sandbox and checks of what they left.
//!
//! Hostile submissions, run through the real launcher and sandbox with CPU-only programs: each must
//! end in a verdict within its timeout plus the grace, with a clear message, the grader (this test
//! process) alive, no process of the run left, and nothing outside its work folder changed. Cases
//! that need a mechanism this machine does not permit say SKIPPED and why (or fail, where
//! CUDABUGS_REQUIRE_NAMESPACES is set).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use grader::tools::launcher::{Launcher, Sandboxed};
use grader::tools::runner::{Exit, Finished, Job, KILL_GRACE};
use grader::tools::sandbox::{Confinement, Isolation, Level, Limits};

use crate::procs;

/// A workbook-like tree: a secret solution, the submission's work folder below the (hidden) folder
/// of every work folder, and a file outside it all.
struct Fixture {
    root: tempfile::TempDir,
    token: String,
}

impl Fixture {
    fn new() -> Fixture {
        let root = tempfile::tempdir().unwrap();
        let p = root.path();
        std::fs::create_dir_all(p.join("solutions/03-race")).unwrap();
        std::fs::write(
            p.join("solutions/03-race/reduce.cu"),
            "SECRET-REFERENCE-FIX",
        )
        .unwrap();
        std::fs::create_dir_all(p.join(".cudabugs/work/check/03-race/learner")).unwrap();
        std::fs::create_dir_all(p.join(".cudabugs/work/check/03-race/reference")).unwrap();
        std::fs::write(
            p.join(".cudabugs/work/check/03-race/reference/reduce.cu"),
            "SECRET-MATERIALISED-FIX",
        )
        .unwrap();
        std::fs::write(p.join("outside.txt"), "untouched").unwrap();
        // An instructor's gradebook and secret, beside the workbook, hidden as `grade` hides them.
        std::fs::create_dir_all(p.join("gradebook")).unwrap();
        std::fs::write(
            p.join("gradebook/journal.jsonl"),
            "{\"student\":\"alice\",\"points\":55}\n",
        )
        .unwrap();
        std::fs::write(p.join("secret.toml"), "seed = 1234567").unwrap();
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let token = format!(
            "cbhostile{}x{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        Fixture { root, token }
    }

    fn work(&self) -> PathBuf {
        self.root
            .path()
            .join(".cudabugs/work/check/03-race/learner")
    }

    fn confinement(&self, limits: Limits) -> Confinement {
        let p = self.root.path();
        Confinement {
            writable: vec![self.work()],
            handed_over: vec![self.work()],
            hidden: vec![
                p.join("solutions"),
                p.join(".cudabugs/work"),
                p.join("gradebook"),
                p.join("secret.toml"),
            ],
            limits,
            ..Confinement::default()
        }
    }

    /// Every file outside the work folder, with its size and time stamp.
    fn outside(&self) -> BTreeMap<PathBuf, (u64, SystemTime)> {
        let mut all = BTreeMap::new();
        let mut stack = vec![self.root.path().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = e.path();
                if path.starts_with(self.work()) {
                    continue;
                }
                let meta = e.metadata().unwrap();
                if meta.is_dir() {
                    stack.push(path.clone());
                }
                all.insert(path, (meta.len(), meta.modified().unwrap()));
            }
        }
        all
    }

    /// Processes on this machine whose command line holds the token.
    fn survivors(&self) -> Vec<String> {
        // A killed process can take a moment to be reaped by whoever is its parent now.
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let found: Vec<String> = std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
                .filter_map(|e| {
                    let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
                    let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
                    let zombie = stat
                        .rsplit(')')
                        .next()
                        .unwrap_or("")
                        .trim_start()
                        .starts_with('Z');
                    let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
                    (cmd.contains(&self.token) && !zombie)
                        .then(|| format!("{}: {cmd}", e.file_name().to_string_lossy()))
                })
                .collect();
            if found.is_empty() || Instant::now() > deadline {
                return found;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Run `script` (with $TOKEN, $ROOT and $WORK set) in the sandbox; check the invariants every
    /// case shares and return what the runner saw.
    fn run(&self, script: &str, timeout: Duration, limits: Limits) -> Finished {
        let before = self.outside();
        let launcher = Sandboxed::for_isolation(Isolation::Auto).unwrap();
        let mut job = Job::new("/bin/sh", timeout)
            .arg("-c")
            .arg(format!("# {}\n{script}", self.token))
            .cwd(self.work())
            .env("TOKEN", &self.token)
            .env("ROOT", self.root.path())
            .env("WORK", self.work())
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .confine(self.confinement(limits));
        job.clear_env = true;
        let started = Instant::now();
        let f = launcher.launch(&job).expect("the sandbox starts");
        let limit = timeout + KILL_GRACE + limits.grace + Duration::from_secs(3);
        assert!(
            started.elapsed() < limit,
            "took {:?}, more than the timeout plus the graces ({limit:?})",
            started.elapsed()
        );
        assert_eq!(f.isolation, Some(launcher.isolation()));
        assert!(
            self.survivors().is_empty(),
            "processes of the run survived: {:?}",
            self.survivors()
        );
        assert_eq!(
            self.outside(),
            before,
            "something outside the work folder changed"
        );
        f
    }
}

fn level() -> Level {
    Sandboxed::probe().0
}

/// Whether this machine permits `level_needed`; if not, the test says it was skipped, or fails where
/// CUDABUGS_REQUIRE_NAMESPACES is set (CI runs as root, where every level must work).
fn needs(level_needed: Level, test: &str) -> bool {
    let (got, why) = Sandboxed::probe();
    if got < level_needed {
        assert!(
            std::env::var_os("CUDABUGS_REQUIRE_NAMESPACES").is_none(),
            "{test}: CUDABUGS_REQUIRE_NAMESPACES is set but this machine permits only {got:?} ({})",
            why.as_deref().unwrap_or_default()
        );
        eprintln!(
            "SKIPPED {test}: needs {level_needed:?}, this machine permits {got:?} ({})",
            why.unwrap_or_default()
        );
        return false;
    }
    true
}

fn limits() -> Limits {
    Limits {
        memory_bytes: Some(512 << 20),
        pids: Some(256),
        file_bytes: Some(64 << 20),
        grace: Duration::from_millis(300),
    }
}

#[test]
fn an_infinite_loop_times_out() {
    let fx = Fixture::new();
    // Half a second: long enough to be a loop, not a start-up (the real limit is the manifest's).
    let f = fx.run("while :; do :; done", Duration::from_millis(500), limits());
    assert_eq!(f.exit, Exit::TimedOut);
    assert_eq!(f.describe_exit(), "timed out and was killed");
}

#[test]
fn a_gigabyte_on_stdout_is_capped_and_counted() {
    let fx = Fixture::new();
    let f = fx.run(
        "head -c 1073741824 /dev/zero",
        Duration::from_secs(60),
        limits(),
    );
    assert_eq!(f.exit, Exit::Code(0));
    assert_eq!(f.stdout.bytes.len() + f.stdout.dropped, 1 << 30);
    assert_eq!(
        f.stdout.bytes.len(),
        grader::tools::runner::DEFAULT_OUTPUT_CAP
    );
}

#[test]
fn a_fork_bomb_is_contained_and_ends_with_the_run() {
    let fx = Fixture::new();
    let f = fx.run(
        "bomb() { bomb | bomb & }; bomb; sleep 0.5",
        Duration::from_secs(1),
        limits(),
    );
    // Under the process limit the bomb may still be forking at the timeout, be killed as left
    // running, or have died out on failed forks: every way, `run` checked that it ended in time and
    // that nothing survived. And the machine can still start processes.
    eprintln!("fork bomb: {}", f.describe_exit());
    assert!(std::process::Command::new("/bin/true")
        .status()
        .unwrap()
        .success());
}

#[test]
fn a_daemon_that_holds_stdout_is_killed_and_reported() {
    let fx = Fixture::new();
    let started = Instant::now();
    let f = fx.run(
        "setsid sleep 300 &\necho started",
        Duration::from_secs(60),
        limits(),
    );
    assert_eq!(f.exit, Exit::Code(0));
    assert_eq!(f.stdout.text(), "started\n");
    assert!(f.leftovers >= 1, "the daemon was not counted");
    assert!(
        f.describe_exit()
            .contains("left a process running after it exited (killed)"),
        "{}",
        f.describe_exit()
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "waited {:?} for a daemon",
        started.elapsed()
    );
}

#[test]
fn a_signal_to_the_parent_reaches_nothing_outside() {
    if !needs(
        Level::Subreaper,
        "a_signal_to_the_parent_reaches_nothing_outside",
    ) {
        return;
    }
    let fx = Fixture::new();
    let f = fx.run(
        "echo parent=$PPID; kill -KILL $PPID; kill -TERM $PPID; echo alive",
        Duration::from_secs(20),
        limits(),
    );
    // This test process is the grader: it is still here to assert.
    assert!(f.stdout.text().contains("alive"), "{}", f.output());
    if level() == Level::Namespaces {
        assert!(
            f.stdout.text().contains("parent=1\n"),
            "the program's parent is the sandbox's init: {}",
            f.output()
        );
    }
}

#[test]
fn a_signal_to_every_process_it_can_see_reaches_only_the_sandbox() {
    if !needs(
        Level::Namespaces,
        "a_signal_to_every_process_it_can_see_reaches_only_the_sandbox",
    ) {
        return;
    }
    let fx = Fixture::new();
    let f = fx.run(
        "kill -KILL -1; echo survived",
        Duration::from_secs(20),
        limits(),
    );
    assert!(f.stdout.text().contains("survived"), "{}", f.output());
}

#[test]
fn writes_outside_the_work_folder_fail_and_inside_succeed() {
    if !needs(
        Level::Namespaces,
        "writes_outside_the_work_folder_fail_and_inside_succeed",
    ) {
        return;
    }
    let fx = Fixture::new();
    let tmp_marker = std::env::temp_dir().join(format!("{}-escaped", fx.token));
    let script = format!(
        "echo x > $ROOT/outside.txt; echo x > $ROOT/new.txt; echo x > {}; echo ok > $WORK/inside.txt; echo $? ",
        tmp_marker.display()
    );
    let f = fx.run(&script, Duration::from_secs(20), limits());
    assert!(
        f.stderr.text().contains("Read-only file system"),
        "{}",
        f.output()
    );
    assert!(!tmp_marker.exists(), "wrote to {}", tmp_marker.display());
    assert_eq!(
        std::fs::read_to_string(fx.work().join("inside.txt")).unwrap(),
        "ok\n"
    );
}

#[test]
fn the_reference_solutions_and_other_submissions_are_unreachable() {
    if !needs(
        Level::Namespaces,
        "the_reference_solutions_and_other_submissions_are_unreachable",
    ) {
        return;
    }
    let fx = Fixture::new();
    let f = fx.run(
        "cat $ROOT/solutions/03-race/reduce.cu; cat $ROOT/.cudabugs/work/check/03-race/reference/reduce.cu; ls -a $ROOT/solutions; grep -rl SECRET $ROOT 2>/dev/null; echo end",
        Duration::from_secs(20),
        limits(),
    );
    assert!(!f.stdout.text().contains("SECRET"), "{}", f.output());
    assert!(f.stdout.text().contains("end"), "{}", f.output());
}

#[test]
fn there_is_no_network() {
    if !needs(Level::Namespaces, "there_is_no_network") {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let fx = Fixture::new();
    let script = format!(
        "python3 -c \"import socket\ntry:\n socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')\nexcept OSError as e: print('refused', e)\""
    );
    let f = fx.run(&script, Duration::from_secs(20), limits());
    assert!(f.stdout.text().starts_with("refused"), "{}", f.output());
    assert!(
        listener.accept().is_err(),
        "the sandboxed program reached a listener on the host"
    );
}

#[test]
fn a_huge_file_stops_at_the_size_limit() {
    let fx = Fixture::new();
    let f = fx.run(
        "exec head -c 209715200 /dev/zero > $WORK/big",
        Duration::from_secs(30),
        limits(),
    );
    assert_eq!(f.exit, Exit::Signal(libc::SIGXFSZ), "{}", f.describe_exit());
    assert!(f.describe_exit().contains("over the size limit"));
    assert!(std::fs::metadata(fx.work().join("big")).unwrap().len() <= 64 << 20);
}

#[test]
fn a_host_memory_hog_is_killed_at_its_limit() {
    if grader::tools::cgroup::RunCgroup::create(Some(1 << 30), None)
        .is_none_or(|c| !c.mechanisms.memory_limit)
    {
        eprintln!("SKIPPED a_host_memory_hog_is_killed_at_its_limit: no cgroup with a memory limit on this machine");
        return;
    }
    let fx = Fixture::new();
    let f = fx.run(
        "exec python3 -c \"b = bytearray(2 << 30); print(len(b))\"",
        Duration::from_secs(60),
        limits(),
    );
    assert_eq!(f.exit, Exit::Signal(libc::SIGKILL), "{}", f.output());
    assert!(
        f.oom_killed,
        "the kill was not put down to the memory limit"
    );
    assert!(
        f.describe_exit().contains("host-memory limit"),
        "{}",
        f.describe_exit()
    );
}

#[test]
fn without_a_sandbox_a_daemon_holding_stdout_is_detected_not_waited_for() {
    // `--isolation none`: the process group misses a setsid daemon, which keeps our pipe open. The
    // runner must still return (after the grace), say so, and not wait for it.
    let fx = Fixture::new();
    let launcher = grader::tools::launcher::Local;
    let marker = fx.work().join("daemon.pid");
    let job = Job::new("/bin/sh", Duration::from_secs(30)).arg("-c").arg(format!("# {}\nsetsid sh -c 'echo $$ > {m}; exec sleep 30' &\nwhile [ ! -s {m} ]; do sleep 0.05; done\necho started", fx.token, m = marker.display())).confine(fx.confinement(limits()));
    let started = Instant::now();
    let f = launcher.launch(&job).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "waited {:?}",
        started.elapsed()
    );
    assert!(f.escaped, "the held pipe was not noticed");
    assert!(f
        .describe_exit()
        .contains("could not be killed (no sandbox)"));
    // Clean up what isolation `none` could not.
    if let Ok(pid) = std::fs::read_to_string(&marker)
        .unwrap_or_default()
        .trim()
        .parse::<i32>()
    {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let _ = Path::new("");
}

#[test]
fn the_subreaper_fallback_also_catches_a_daemon_and_shields_the_grader() {
    // What `auto` falls back to where namespaces are refused: forced here, whatever this machine permits.
    let fx = Fixture::new();
    let mut job = Job::new("/bin/sh", Duration::from_secs(30))
        .arg("-c")
        .arg(format!(
            "# {}\nsetsid sleep 300 &\nkill -KILL $PPID\necho survived",
            fx.token
        ))
        .confine(fx.confinement(limits()));
    job.level = Some(Level::Subreaper);
    let started = Instant::now();
    let f = grader::tools::runner::run(&job).unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(f.isolation, Some(Level::Subreaper));
    // Its parent was the subreaper, which the kill ended; the grader (this process) is untouched, and
    // what the program left running was still caught through the run's cgroup or the process group.
    assert!(fx.survivors().is_empty(), "{:?}", fx.survivors());
}

/// What the sandboxed program is, read from its own /proc/self/status.
#[test]
fn the_program_has_no_privilege_left_and_runs_under_the_filter() {
    if !needs(
        Level::Subreaper,
        "the_program_has_no_privilege_left_and_runs_under_the_filter",
    ) {
        return;
    }
    let fx = Fixture::new();
    let f = fx.run("id -u; grep -E '^(CapPrm|CapEff|CapBnd|CapAmb|CapInh|NoNewPrivs|Seccomp):' /proc/self/status", Duration::from_secs(20), limits());
    let out = f.stdout.text();
    let field = |k: &str| {
        out.lines()
            .find_map(|l| {
                l.strip_prefix(&format!("{k}:"))
                    .map(|v| v.trim().to_string())
            })
            .unwrap_or_else(|| panic!("no {k} in {out}"))
    };
    for cap in ["CapPrm", "CapEff", "CapBnd", "CapAmb", "CapInh"] {
        assert_eq!(field(cap), "0000000000000000", "{cap}: {out}");
    }
    assert_eq!(field("NoNewPrivs"), "1", "{out}");
    assert_eq!(field("Seccomp"), "2", "a filter is installed: {out}");
    // As root, the grader makes the program another user; otherwise it is the grader's own user,
    // mapped to root of a user namespace with nothing left of that root.
    if unsafe { libc::geteuid() } == 0 {
        assert_eq!(
            out.lines().next().unwrap_or_default().trim(),
            "65534",
            "{out}"
        );
    }
}

/// The CPUs a run is started on are all it gets (`tools::cpus`: `grade` keeps its timed calls' cores
/// for them alone): a program cannot widen its own affinity to spin beside a classmate's timed call.
/// The probe lies, as a hostile program would: whatever happened, it says it was refused. So the
/// test believes nothing it prints, and reads its affinity from outside (`/proc/PID/status`) while
/// it runs: with the filter's `sched_setaffinity` refusal removed, it reads the widened `0-1`.
#[test]
fn a_program_stays_on_the_cpus_it_was_started_on() {
    if !needs(
        Level::Subreaper,
        "a_program_stays_on_the_cpus_it_was_started_on",
    ) {
        return;
    }
    let fx = Fixture::new();
    let cpus = grader::tools::cpus::allowed();
    let first = &cpus[..1];
    // The run is started from this thread, and a new thread starts on its creator's CPUs.
    let _pinned = grader::tools::cpus::pin_thread(first);
    let marker = format!("affinity-probe-{}", std::process::id());
    let script = format!(
        r#"exec python3 - {marker} <<'PY'
import os, time
try:
    os.sched_setaffinity(0, range(os.cpu_count()))
except OSError:
    pass
print("widening refused")
# Time for the test to read the affinity from outside.
time.sleep(2)
PY"#
    );
    let (f, seen) = std::thread::scope(|scope| {
        let run = scope.spawn(|| fx.run(&script, Duration::from_secs(20), limits()));
        let mut seen = Vec::new();
        while !run.is_finished() {
            seen.extend(affinity_of_processes_named(&marker));
            std::thread::sleep(Duration::from_millis(20));
        }
        (run.join().unwrap(), seen)
    });
    assert!(f.success(), "{}", f.output());
    // Read from outside, from its start to two seconds after its attempt: the one CPU it started on.
    assert!(
        seen.len() >= 10,
        "the program was seen {} times",
        seen.len()
    );
    let expected = first[0].to_string();
    assert!(
        seen.iter().all(|list| *list == expected),
        "its CPUs, read from /proc while it ran: {seen:?}, started on {expected}"
    );
}

/// `Cpus_allowed_list` of every process whose command line holds `marker`, read from `/proc`.
fn affinity_of_processes_named(marker: &str) -> Vec<String> {
    procs::with_command_line(marker)
        .into_iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .filter_map(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|v| v.trim().to_string())
        })
        .collect()
}

/// The escape a class found with a program run as root: remount the root writable, unmount the
/// folders hidden over the gradebook, leave through a new user namespace, reach another process.
/// Every step is refused, the gradebook is not even visible, and nothing outside changed.
#[test]
fn a_program_cannot_remount_unshare_ptrace_or_see_the_gradebook() {
    if !needs(
        Level::Namespaces,
        "a_program_cannot_remount_unshare_ptrace_or_see_the_gradebook",
    ) {
        return;
    }
    let fx = Fixture::new();
    let script = r#"exec python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def attempt(name, call):
    try:
        r = call()
        ok = r == 0 if isinstance(r, int) else True
        print(name, "SUCCEEDED" if ok else "refused " + os.strerror(ctypes.get_errno()))
    except OSError as e:
        print(name, "refused", e.strerror)
MS_REMOUNT, MS_BIND, MNT_DETACH = 32, 4096, 2
root = os.environ["ROOT"]
attempt("remount /", lambda: libc.mount(None, b"/", None, MS_REMOUNT | MS_BIND, None))
attempt("remount the workbook", lambda: libc.mount(None, root.encode(), None, MS_REMOUNT | MS_BIND, None))
for line in open("/proc/self/mountinfo"):
    f = line.split()
    if "tmpfs" in line and f[4] not in ("/dev/shm", "/proc"):
        attempt("umount " + f[4], lambda t=f[4]: libc.umount2(t.encode(), MNT_DETACH))
attempt("unshare user+mount", lambda: libc.unshare(0x10000000 | 0x20000))
attempt("unshare mount", lambda: libc.unshare(0x20000))
attempt("ptrace attach 1", lambda: libc.ptrace(16, 1, None, None))
attempt("ptrace traceme", lambda: libc.ptrace(0, 0, None, None))
attempt("setns mount of pid 1", lambda: libc.setns(os.open("/proc/1/ns/mnt", os.O_RDONLY), 0))
attempt("chroot", lambda: libc.chroot(b"."))
attempt("write beside the gradebook", lambda: open(os.path.join(root, "gradebook", "marker"), "w").write("x"))
attempt("write in the workbook", lambda: open(os.path.join(root, "escape-marker"), "w").write("x"))
print("gradebook holds", sorted(os.listdir(os.path.join(root, "gradebook"))))
print("secret reads", repr(open(os.path.join(root, "secret.toml")).read()))
PY"#;
    let f = fx.run(script, Duration::from_secs(30), limits());
    let out = f.stdout.text();
    eprintln!("{out}");
    assert!(f.success(), "{}", f.output());
    assert!(
        !out.contains("SUCCEEDED"),
        "an escape step succeeded:\n{out}"
    );
    for step in [
        "remount /",
        "unshare user+mount",
        "ptrace attach 1",
        "setns",
        "chroot",
        "write beside the gradebook",
        "umount",
    ] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(step) && l.contains("refused")),
            "{step} was not tried and refused:\n{out}"
        );
    }
    assert!(out.contains("gradebook holds []"), "{out}");
    assert!(out.contains("secret reads ''"), "{out}");
    assert!(!fx.root.path().join("gradebook/marker").exists());
}

/// The sandbox still builds CUDA: nvcc (the workbook's own where it is installed) compiles and
/// links a kernel as the sandbox's user, inside it.
#[test]
fn nvcc_still_builds_inside_the_sandbox() {
    let Some(nvcc) = grader::tools::toolchain::Toolchain::discover(&crate::repo()).nvcc else {
        assert!(
            std::env::var_os("CUDABUGS_REQUIRE_NVCC").is_none(),
            "CUDABUGS_REQUIRE_NVCC is set but no nvcc was found"
        );
        eprintln!(
            "SKIPPED nvcc_still_builds_inside_the_sandbox: no nvcc (cargo xtask toolkit install)"
        );
        return;
    };
    let fx = Fixture::new();
    std::fs::write(
        fx.work().join("k.cu"),
        "__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\nint main() { return 0; }\n",
    )
    .unwrap();
    let toolkit = std::fs::canonicalize(&nvcc.path)
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let launcher = Sandboxed::for_isolation(Isolation::Auto).unwrap();
    let mut confine = fx.confinement(limits());
    confine.limits.memory_bytes = None;
    confine.readable.push(toolkit);
    let mut job = Job::new(&nvcc.path, Duration::from_secs(120))
        .args(nvcc.extra_flags.iter().cloned())
        .args(["-arch=sm_90", "-o", "k", "k.cu"])
        .cwd(fx.work())
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("TMPDIR", fx.work())
        .env("HOME", fx.work())
        .confine(confine);
    job.clear_env = true;
    let f = launcher.launch(&job).unwrap();
    assert!(f.success(), "nvcc in the sandbox: {}", f.output());
    assert!(fx.work().join("k").is_file());
}

/// A folder the run may write but the grader did not make for it (where `sanitize` starts a
/// program of the user's own) keeps its owner: only the grader's own run folders are handed to the
/// sandbox's user.
#[test]
fn a_folder_of_the_user_s_own_is_never_handed_over() {
    use std::os::unix::fs::MetadataExt;
    if !needs(
        Level::Subreaper,
        "a_folder_of_the_user_s_own_is_never_handed_over",
    ) {
        return;
    }
    let fx = Fixture::new();
    let mine = fx.root.path().join("my-project");
    std::fs::create_dir_all(mine.join("src")).unwrap();
    std::fs::write(mine.join("src/main.cu"), "// mine").unwrap();
    let before: Vec<(u32, u32)> = [&mine, &mine.join("src"), &mine.join("src/main.cu")]
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| (m.uid(), m.gid())).unwrap())
        .collect();
    let mut confine = fx.confinement(limits());
    confine.writable.push(mine.clone());
    let mut job = Job::new("/bin/true", Duration::from_secs(10))
        .cwd(&mine)
        .confine(confine);
    job.clear_env = true;
    let f = Sandboxed::for_isolation(Isolation::Auto)
        .unwrap()
        .launch(&job)
        .unwrap();
    assert!(f.success(), "{}", f.output());
    let after: Vec<(u32, u32)> = [&mine, &mine.join("src"), &mine.join("src/main.cu")]
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| (m.uid(), m.gid())).unwrap())
        .collect();
    assert_eq!(after, before, "the user's folder changed owner");
}

/// System V shared memory outlives the process that made it, and a segment's key is all another
/// process needs to find it: without an IPC namespace of its own, a run could leave answers (or a
/// gigabyte of memory) for its own next run or for another student's. Each run's segments are its
/// own and go with it.
#[test]
fn shared_memory_one_run_leaves_is_not_there_for_the_next() {
    if !needs(
        Level::Namespaces,
        "shared_memory_one_run_leaves_is_not_there_for_the_next",
    ) {
        return;
    }
    let fx = Fixture::new();
    let leave = r#"exec python3 - <<'PY'
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
IPC_CREAT = 0o1000
shm = libc.shmget(0xCB0B, 4096, IPC_CREAT | 0o666)
addr = libc.shmat(shm, None, 0)
ctypes.memmove(addr, b"the answer is 42", 16)
print("left", shm)
PY"#;
    let find = r#"exec python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
shm = libc.shmget(0xCB0B, 0, 0)
print("found" if shm >= 0 else "absent " + os.strerror(ctypes.get_errno()))
PY"#;
    let left = fx.run(leave, Duration::from_secs(30), limits());
    assert!(left.stdout.text().starts_with("left"), "{}", left.output());
    let found = fx.run(find, Duration::from_secs(30), limits());
    assert_eq!(
        found.stdout.text().trim(),
        "absent No such file or directory",
        "{}",
        found.output()
    );
}

/// The harness writes a case's outputs in the run's folder, and the program it runs in can write
/// there after it: an output file whose header claims 2^50 floats. The grader read the claim and
/// allocated it (an abort: every pair of a class lost with it); now the claim is refused.
#[test]
fn an_output_file_that_claims_more_than_it_holds_is_refused_not_allocated() {
    let fx = Fixture::new();
    let forge = r#"exec python3 - <<'PY'
import os, struct
header = b"CBOT" + struct.pack("<II", 1, 1) + struct.pack("<H", 1) + b"x" + bytes([1])
with open(os.path.join(os.environ["WORK"], "case0.out"), "wb") as f:
    f.write(header + struct.pack("<Q", 1 << 50) + b"\0" * 16)
print("forged")
PY"#;
    let f = fx.run(forge, Duration::from_secs(30), limits());
    assert!(f.stdout.text().starts_with("forged"), "{}", f.output());
    let why = grader::exercise::data::read_outputs(&fx.work().join("case0.out"))
        .expect_err("a claim the file cannot hold is refused");
    assert!(
        why.to_string()
            .contains("claims 1125899906842624 elements, more than the 16 bytes left in the file"),
        "{why}"
    );
}
