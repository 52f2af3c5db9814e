//! `kill_all_running` (what Ctrl-C does) takes down every running job's process group. In a test
//! binary of its own: it kills every job of the process.

use std::time::{Duration, Instant};

use grader::tools::runner::{self, Exit, Job};

mod procs;

#[test]
fn kill_all_running_ends_every_live_job_and_its_children() {
    let jobs: Vec<_> = (0..3)
        .map(|_| {
            std::thread::spawn(|| {
                runner::run(
                    &Job::new("/bin/sh", Duration::from_secs(120))
                        .arg("-c")
                        .arg("sleep 100 & sleep 100"),
                )
                .unwrap()
            })
        })
        .collect();
    // Wait until all three have started (their sleeps show up as our grandchildren).
    let started = Instant::now();
    while runner::running_jobs() < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "jobs did not start"
        );
        std::thread::yield_now();
    }
    runner::kill_all_running();
    for j in jobs {
        let f = j.join().unwrap();
        assert!(matches!(f.exit, Exit::Signal(_)), "{:?}", f.exit);
        assert!(f.wall < Duration::from_secs(30));
    }
    assert_eq!(runner::running_jobs(), 0);
}

const AS_GRADER: &str = "CUDABUGS_TEST_AS_GRADER";

/// A grader killed outright (SIGKILL: no handler runs) leaves none of its runs behind: the
/// sandbox's monitor, its init and the program die with it (`PR_SET_PDEATHSIG`), the program's own
/// child included. Run as two processes: this test starts itself again as the "grader", which
/// starts a sandboxed run that would sleep for minutes, and kills it.
#[test]
fn a_grader_killed_outright_takes_its_sandboxed_runs_with_it() {
    use grader::tools::sandbox::{Confinement, Isolation};
    if let Some(marker) = std::env::var_os(AS_GRADER) {
        let marker = marker.to_string_lossy().into_owned();
        let work = tempfile::tempdir().unwrap();
        let mut job = Job::new("/bin/sh", Duration::from_secs(600))
            .arg("-c")
            .arg(format!("sleep {marker} & exec sleep {marker}"))
            .cwd(work.path());
        job.confine = Some(Confinement {
            writable: vec![work.path().to_path_buf()],
            handed_over: vec![work.path().to_path_buf()],
            ..Confinement::default()
        });
        let launcher = grader::tools::launcher::Sandboxed::for_isolation(Isolation::Auto).unwrap();
        let _ = launcher.launch(&job);
        return;
    }
    // A sleep of a length no other process asks for.
    let marker = format!("271.{}", std::process::id());
    let mut grader = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_grader_killed_outright_takes_its_sandboxed_runs_with_it",
            "--nocapture",
        ])
        .env(AS_GRADER, &marker)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while procs::with_command_line(&format!("sleep {marker}")).len() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the run did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = cgroups_of(grader.id());
    grader.kill().unwrap();
    grader.wait().unwrap();
    // In namespaces the run's pid 1 dies with the grader and takes every process of the run with
    // it. Below that, the program dies with it, but what the program started is nobody's to end:
    // the parent-death signal is not inherited.
    let (level, _) = grader::tools::launcher::Sandboxed::probe();
    let may_stay = if level < grader::tools::sandbox::Level::Namespaces {
        eprintln!("SKIPPED (the program's own child): no namespaces here ({level:?})");
        1
    } else {
        0
    };
    let killed = Instant::now();
    while procs::with_command_line(&format!("sleep {marker}")).len() > may_stay {
        assert!(
            killed.elapsed() < Duration::from_secs(10),
            "the run outlived its grader: {:?}",
            procs::with_command_line(&format!("sleep {marker}"))
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in procs::with_command_line(&format!("sleep {marker}")) {
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    while !procs::with_command_line(&format!("sleep {marker}")).is_empty() {
        assert!(
            killed.elapsed() < Duration::from_secs(20),
            "a sleep outlived SIGKILL"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Its run's cgroup, which it never removed, goes when the next grader starts a run.
    if left.is_empty() {
        eprintln!("SKIPPED (cgroups): this machine gave the run no cgroup");
        return;
    }
    // Another grader on this machine may sweep them first (any grader's first run does): then
    // there is less to show, and the end is the same.
    let swept: Vec<_> = left.iter().filter(|d| !d.exists()).collect();
    if !swept.is_empty() {
        eprintln!("already swept by another grader on this machine: {swept:?}");
    }
    let next = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_grader_killed_outright_takes_its_sandboxed_runs_with_it",
        ])
        .env(AS_GRADER, "0")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(next.success());
    assert!(
        left.iter().all(|d| !d.exists()),
        "the dead grader's cgroups are still there: {left:?}"
    );
}

/// The run cgroups grader `pid` made (`cudabugs-PID-N`), wherever its own cgroup is.
fn cgroups_of(pid: u32) -> Vec<std::path::PathBuf> {
    let prefix = format!("cudabugs-{pid}-");
    let mut found = Vec::new();
    let mut dirs = vec![(std::path::PathBuf::from("/sys/fs/cgroup"), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if !path.is_dir() {
                continue;
            }
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                found.push(path);
            } else if depth < 6 {
                dirs.push((path, depth + 1));
            }
        }
    }
    found
}
