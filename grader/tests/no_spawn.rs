//! A graded program cannot start a process: the harness's no-spawn filter (harness/harness.cu),
//! asked for by the sandbox's environment, is in place before the program's own static constructor
//! runs, and stacks on the sandbox's own filter. The hostile program scripts/hostile/spawn.*.cu
//! (spliced into the reference fix of 03-race as scripts/gpu-verify.sh splices it) tries fork,
//! vfork, clone, posix_spawn, system() and execve from a constructor and from cb_run. Without a
//! GPU the harness stops at CUDA's first call, after cb_run's tries. Needs nvcc (SKIPPED without).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use grader::tools::launcher::{Launcher, Sandboxed};
use grader::tools::nvcc::{prepare_harness, Harness};
use grader::tools::runner::{Finished, Job};
use grader::tools::sandbox::{Confinement, Isolation};
use grader::tools::toolchain::{Nvcc, Toolchain};

use crate::repo;

fn nvcc(test: &str) -> Option<Nvcc> {
    let found = Toolchain::discover(&repo()).nvcc;
    if found.is_none() {
        assert!(
            std::env::var_os("CUDABUGS_REQUIRE_NVCC").is_none(),
            "CUDABUGS_REQUIRE_NVCC is set but no nvcc was found"
        );
        eprintln!("SKIPPED {test}: no nvcc (cargo xtask toolkit install)");
    }
    found
}

/// The hostile variant, spliced as scripts/gpu-verify.sh splices it: headers.h, then the reference
/// fix with NAME.top.cu after the harness's include and NAME.run.cu at the start of cb_run.
fn hostile(name: &str) -> String {
    let dir = repo().join("scripts/hostile");
    let part = |suffix: &str| std::fs::read_to_string(dir.join(format!("{name}.{suffix}")));
    let mut text = std::fs::read_to_string(dir.join("headers.h")).unwrap();
    let fix = std::fs::read_to_string(repo().join("solutions/03-race/reduce.cu")).unwrap();
    for line in fix.lines() {
        text.push_str(line);
        text.push('\n');
        if line == "#include \"cudabugs.cuh\"" {
            text.push_str(&part("top.cu").unwrap_or_default());
        }
        if line == "void cb_run(cb::Io& io) {" {
            text.push_str(&part("run.cu").unwrap_or_default());
        }
    }
    text
}

/// The harness as every exercise's build links it, prepared once for this binary's tests by the
/// grader's own `prepare_harness` (in a folder under the target directory, its object named by
/// what it is made of, so a later run takes it built). Compiled again from source with each test's
/// program, it made this binary's tests take 8.0 s of CPU (user) on the 2-core machine; now 4.1 s,
/// and 1.8 s once built.
fn harness(nvcc: &Nvcc) -> &'static Harness {
    // The tests of this binary run at once: the first prepares it, the others wait for it.
    static HARNESS: std::sync::OnceLock<Harness> = std::sync::OnceLock::new();
    HARNESS.get_or_init(|| {
        let sources = repo().join("harness");
        let mut files: Vec<(String, String)> = std::fs::read_dir(&sources)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&p).unwrap())
            })
            .collect();
        files.sort();
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-spawn-harness");
        prepare_harness(nvcc, &files, &dir).expect("the harness builds")
    })
}

/// `source` built with the harness into `dir/name`.
fn build(nvcc: &Nvcc, dir: &Path, name: &str, source: &str) -> PathBuf {
    let cu = dir.join(format!("{name}.cu"));
    std::fs::write(&cu, source).unwrap();
    let out = dir.join(name);
    let harness = harness(nvcc);
    let status = Command::new(&nvcc.path)
        .args(&nvcc.extra_flags)
        .args(["-std=c++17", "-O2", "-I"])
        .arg(&harness.include_dir)
        .arg(&harness.object)
        .arg(&cu)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "nvcc failed on {}", cu.display());
    out
}

/// A case file of 03-race for the harness: n = 4, x = [1, 2, 3, 4], one output `total`.
fn case_file(path: &Path) {
    let name = |b: &mut Vec<u8>, s: &str| {
        b.extend((s.len() as u16).to_le_bytes());
        b.extend(s.as_bytes());
    };
    let mut b = b"CBIN".to_vec();
    b.extend(1u32.to_le_bytes());
    b.extend(1u32.to_le_bytes());
    name(&mut b, "n");
    b.extend(4i64.to_le_bytes());
    b.extend(1u32.to_le_bytes());
    name(&mut b, "x");
    b.push(1);
    b.extend(4u64.to_le_bytes());
    for v in [1f32, 2., 3., 4.] {
        b.extend(v.to_le_bytes());
    }
    b.extend(1u32.to_le_bytes());
    name(&mut b, "total");
    b.push(1);
    b.extend(1u64.to_le_bytes());
    std::fs::write(path, b).unwrap();
}

/// `program IN OUT` in `dir`, sandboxed as the grader runs learner code (with its environment).
fn sandboxed(program: &Path, dir: &Path) -> Finished {
    let mut job = Job::new(program, Duration::from_secs(60))
        .args(["case.in", "case.out"])
        .cwd(dir)
        .env("PATH", "/usr/bin:/bin")
        .env(
            grader::tools::seccomp::NO_SPAWN_ENV.0,
            grader::tools::seccomp::NO_SPAWN_ENV.1,
        )
        .confine(Confinement {
            writable: vec![dir.to_path_buf()],
            handed_over: vec![dir.to_path_buf()],
            ..Confinement::default()
        });
    job.clear_env = true;
    Sandboxed::for_isolation(Isolation::Auto)
        .unwrap()
        .launch(&job)
        .expect("the sandbox starts")
}

/// What the hostile program said it got, one line a try: "spawn constructor fork: refused ...".
fn tries(out: &str, when: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.strip_prefix(&format!("spawn {when} ")))
        .filter(|l| !l.ends_with(": trying"))
        .map(String::from)
        .collect()
}

#[test]
fn a_graded_program_cannot_fork_or_exec_from_a_constructor_or_cb_run() {
    let Some(nvcc) = nvcc("a_graded_program_cannot_fork_or_exec_from_a_constructor_or_cb_run")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let program = build(&nvcc, dir.path(), "spawn", &hostile("spawn"));
    case_file(&dir.path().join("case.in"));

    // Run as a learner would, without the switch: every try works, so the tries can tell.
    let free = Command::new(&program)
        .args(["case.in", "case.out"])
        .current_dir(dir.path())
        .env_remove(grader::tools::seccomp::NO_SPAWN_ENV.0)
        .output()
        .unwrap();
    let free = String::from_utf8_lossy(&free.stderr).to_string();
    assert!(
        tries(&free, "constructor").contains(&"fork: SUCCEEDED".to_string()),
        "{free}"
    );

    let f = sandboxed(&program, dir.path());
    let out = f.stderr.text();
    eprintln!("{out}");
    assert!(!out.contains("could not be installed"), "{out}");
    for when in ["constructor", "cb_run"] {
        let got = tries(&out, when);
        for call in ["fork", "vfork", "clone", "posix_spawn", "system", "execve"] {
            assert!(
                got.iter()
                    .any(|l| l.starts_with(&format!("{call}: refused"))),
                "{when}: {call} was not tried and refused:\n{out}"
            );
        }
        assert!(
            got.contains(&"thread: SUCCEEDED".to_string()),
            "{when}: threads must still start:\n{out}"
        );
        assert!(!got
            .iter()
            .any(|l| l.contains("SUCCEEDED") && !l.starts_with("thread")));
    }
}

/// A program with a `.preinit_array` entry of its own (which would run before the harness's, or
/// after it undoing nothing) is refused before main: the harness must be the only one.
#[test]
fn a_program_with_its_own_preinit_entry_is_refused() {
    let Some(nvcc) = nvcc("a_program_with_its_own_preinit_entry_is_refused") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let source = "#include \"cudabugs.cuh\"\n#include <cstdio>\nstatic void early(int, char**, char**) { std::fputs(\"early ran\\n\", stderr); }\n__attribute__((section(\".preinit_array\"), used)) static void (*const early_entry)(int, char**, char**) = early;\nvoid cb_run(cb::Io&) { std::fputs(\"cb_run ran\\n\", stderr); }\n";
    let program = build(&nvcc, dir.path(), "early", source);
    case_file(&dir.path().join("case.in"));
    let f = sandboxed(&program, dir.path());
    let out = f.stderr.text();
    assert_eq!(
        f.exit,
        grader::tools::runner::Exit::Code(126),
        "{}",
        f.output()
    );
    assert!(
        out.contains("the program has a .preinit_array entry of its own"),
        "{out}"
    );
    assert!(!out.contains("cb_run ran"), "{out}");
}
