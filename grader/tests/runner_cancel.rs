//! `kill_all_running` (what Ctrl-C does) takes down every running job's process group. In a test
//! binary of its own: it kills every job of the process.

use std::time::{Duration, Instant};

use grader::tools::runner::{self, Exit, Job};

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
