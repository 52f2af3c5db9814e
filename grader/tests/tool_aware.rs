//! One file: the scan over every fixture and fix, with the table of what each adversarial fixture is flagged for (about 180 of its lines).
//! The tool-aware scan on the workbook's own code and on the fixtures: every reference solution,
//! every alternative and half fix of `scripts/alt-fixes/` and every honest student file scans clean
//! against its exercise; every adversarial fixture that tells it is watched or forges what the
//! grader reads is flagged, for the kinds its trick needs. No GPU or CUDA toolkit is needed.
//! The SASS parser is tested on real `cuobjdump -sass` output (`tests/fixtures/sass/`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use grader::exercise::catalog;
use grader::exercise::workbook::Exercise;
use grader::judge::tool_aware::{self, Kind, Suspect};

use crate::repo;

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// Every exercise as the binary embeds it: the pristine original and the solution.
fn exercises() -> Vec<Exercise> {
    catalog::discover(&repo())
        .unwrap()
        .into_iter()
        .map(|d| Exercise {
            original: leak(d.original),
            solution: leak(d.solution),
            manifest: d.manifest,
        })
        .collect()
}

fn exercise<'a>(all: &'a [Exercise], id: &str) -> &'a Exercise {
    all.iter()
        .find(|e| e.id() == id)
        .unwrap_or_else(|| panic!("no exercise {id}"))
}

/// The exercise a bare student file belongs to, by its source name (`reduce.cu` is 03-race; of
/// the exercises that share a name, `sum.cu` is 57-reduction, `cool.cu` 63-transfers,
/// `histogram.cu` 05-memset and `center.cu` 07-leak, as in the fixtures' READMEs).
fn exercise_of_file<'a>(all: &'a [Exercise], path: &Path) -> &'a Exercise {
    let name = path.file_name().unwrap().to_str().unwrap();
    let named: Vec<&Exercise> = all
        .iter()
        .filter(|e| e.manifest.source_name() == name)
        .collect();
    match named.as_slice() {
        [one] => one,
        _ if name == "sum.cu" => exercise(all, "57-reduction"),
        _ if name == "cool.cu" => exercise(all, "63-transfers"),
        _ if name == "histogram.cu" => exercise(all, "05-memset"),
        _ if name == "center.cu" => exercise(all, "07-leak"),
        _ => panic!(
            "which exercise is {}? ({} have that source name)",
            path.display(),
            named.len()
        ),
    }
}

/// `scripts/splice-region.sh BASE REGION`: BASE with the region that REGION's first `ANCHOR:` names
/// replaced by every line of REGION.
fn splice_region(base: &str, region: &str) -> String {
    let name = region
        .lines()
        .find_map(|l| l.split_once("ANCHOR: ").map(|(_, n)| n.trim().to_string()))
        .expect("a region file names its region");
    let (begin, end) = (format!("ANCHOR: {name}"), format!("ANCHOR_END: {name}"));
    let mut out = Vec::new();
    let mut skip = false;
    for line in base.lines() {
        if !skip && line.ends_with(&begin) {
            out.extend(region.lines());
            skip = true;
        } else if skip && line.ends_with(&end) {
            skip = false;
        } else if !skip {
            out.push(line);
        }
    }
    assert!(!skip, "region {name} never closed in the base");
    out.join("\n") + "\n"
}

fn cu_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "cu") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

fn describe(found: &[Suspect]) -> String {
    found
        .iter()
        .map(|s| {
            format!(
                "  line {} {:?} `{}`: {}",
                s.line, s.kind, s.token, s.excerpt
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_reference_solution_is_clean_and_needs_the_allowlist_only_for_its_own_functions() {
    let all = exercises();
    assert!(all.len() >= 40, "only {} exercises found", all.len());
    let mut needed = Vec::new();
    for ex in &all {
        tool_aware::workbook_clean(ex).unwrap();
        assert!(tool_aware::scan(ex, ex.solution).is_empty());
        // Without the allowlist, the functions the exercise's regions define for the code after them
        // (`warp_sum`, `launch_sum`) look like hooks; nothing else may need it.
        for (what, text) in [("original", ex.original), ("solution", ex.solution)] {
            let raw = tool_aware::scan_regions(text);
            let own: BTreeSet<&str> = raw
                .iter()
                .filter(|s| s.kind == Kind::Symbols && s.token.ends_with("(...) {...}"))
                .map(|s| s.token.as_str())
                .collect();
            let other: Vec<Suspect> = raw
                .iter()
                .filter(|s| !own.contains(s.token.as_str()))
                .cloned()
                .collect();
            if !own.is_empty() {
                needed.push(format!(
                    "{} {what}: {}",
                    ex.id(),
                    own.iter().copied().collect::<Vec<_>>().join(", ")
                ));
            }
            assert!(
                other.is_empty(),
                "{} {what} needs the allowlist for more than its own functions:\n{}",
                ex.id(),
                describe(&other)
            );
        }
    }
    println!(
        "regions that define functions the code after them calls:\n{}",
        needed.join("\n")
    );
}

#[test]
fn every_alternative_and_half_fix_is_clean() {
    let all = exercises();
    let dir = repo().join("scripts/alt-fixes");
    let mut n = 0;
    for path in cu_files(&dir) {
        let name = path.file_name().unwrap().to_str().unwrap();
        let ex = all
            .iter()
            .find(|e| name.starts_with(&format!("{}-", e.id())))
            .unwrap_or_else(|| panic!("no exercise for {name}"));
        let spliced = splice_region(ex.solution, &std::fs::read_to_string(&path).unwrap());
        grader::exercise::regions::parse(&spliced).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let found = tool_aware::scan(ex, &spliced);
        assert!(found.is_empty(), "{name} is flagged:\n{}", describe(&found));
        n += 1;
    }
    assert!(n >= 50, "only {n} alternative fixes found");
}

#[test]
fn every_honest_student_file_is_clean() {
    let all = exercises();
    let fixtures = repo().join("tests/fixtures");
    // heidi is the class's hostile student (a daemon left behind, another student's file read):
    // she is among the adversarial ones below.
    let mut files: Vec<PathBuf> = cu_files(&fixtures.join("class"))
        .into_iter()
        .filter(|p| !p.starts_with(fixtures.join("class/heidi")))
        .collect();
    for honest in ["honest-ref", "honest-alt", "half-fix"] {
        files.extend(cu_files(&fixtures.join("adversarial").join(honest)));
    }
    assert!(files.len() >= 24, "only {} honest files found", files.len());
    for path in files {
        let ex = exercise_of_file(&all, &path);
        let text = std::fs::read_to_string(&path).unwrap();
        // (Some of the class are tamper cases, erin's edit outside the regions: scanned all the same.)
        let found = tool_aware::scan(ex, &text);
        assert!(
            found.is_empty(),
            "{} is flagged:\n{}",
            path.display(),
            describe(&found)
        );
    }
}

/// Each adversarial file, and the kinds (at least) its trick must be flagged for.
const ADVERSARIAL: &[(&str, &[Kind])] = &[
    // environ for NV_NSIGHT_INJECTION*; 03 also hooks cb_run's cudaMemcpy.
    (
        "adversarial/profiler-aware/reduce.cu",
        &[Kind::Environment, Kind::Symbols],
    ),
    ("adversarial/profiler-aware/sum.cu", &[Kind::Environment]),
    // /proc/self/cmdline and the --call-times file rewritten by an atexit handler; clock_gettime.
    (
        "adversarial/forge-times/sum.cu",
        &[Kind::Clock, Kind::Files, Kind::Processes, Kind::Environment],
    ),
    // ./cache.bin across processes.
    ("adversarial/cache/sum.cu", &[Kind::Files]),
    // Walks up from $HOME to the workbook's .cudabugs to plant a section in ncu's section folder.
    (
        "adversarial/section-plant/sum.cu",
        &[Kind::Environment, Kind::Files],
    ),
    // environ for NV_SANITIZER_INJECTION*.
    (
        "adversarial/sanitizer-stall/reduce.cu",
        &[Kind::Environment],
    ),
    // environ for NV_SANITIZER_INJECTION*, then sleep() declared `extern "C"`: meant to stay under
    // the pace's 30 s floor.
    (
        "adversarial/pace-under-floor/reduce.cu",
        &[Kind::Environment, Kind::Symbols],
    ),
    // cudaMemcpy overload that sums on the host.
    ("adversarial/decoy-host/reduce.cu", &[Kind::Symbols]),
    // 16 pthreads declared by C linkage, in a cudaMemcpy hook.
    (
        "adversarial/threaded-host/reduce.cu",
        &[Kind::Processes, Kind::Symbols],
    ),
    // clone(CLONE_VM) declared by C linkage, in a cudaMemcpy hook.
    (
        "adversarial/clone-host/reduce.cu",
        &[Kind::Processes, Kind::Symbols],
    ),
    // Only CUDA calls and a C declaration of sleep(): flagged for the declaration.
    ("adversarial/hog/reduce.cu", &[Kind::Symbols]),
    // sleep() before main, declared `extern "C"`: what the GPU memory share does not stop.
    ("adversarial/slow-start/reduce.cu", &[Kind::Symbols]),
    // fork() in a static initializer.
    (
        "adversarial/storm/reduce.cu",
        &[Kind::Processes, Kind::Symbols],
    ),
    // signal(SIGXFSZ) ignored and a 3 GiB file written.
    (
        "adversarial/disk/sum.cu",
        &[Kind::Files, Kind::Processes, Kind::Symbols],
    ),
    // fork + setsid, /tmp and $HOME marker files.
    (
        "adversarial/leftover/reduce.cu",
        &[
            Kind::Files,
            Kind::Processes,
            Kind::Environment,
            Kind::Symbols,
        ],
    ),
    // The class's hostile student: another student's file read, /tmp written, kill(-1), a daemon.
    (
        "class/heidi/reduce.cu",
        &[Kind::Files, Kind::Processes, Kind::Symbols],
    ),
    // /proc/self/environ and cmdline, --timeline, an atexit handler rewriting --call-times.
    (
        "adversarial-call-clock/forge-clock/heat.cu",
        &[Kind::Files, Kind::Processes, Kind::Environment],
    ),
];

#[test]
fn every_adversarial_fixture_is_flagged_for_its_trick() {
    let all = exercises();
    let fixtures = repo().join("tests/fixtures");
    for (file, expected) in ADVERSARIAL {
        let path = fixtures.join(file);
        let ex = exercise_of_file(&all, &path);
        let text = std::fs::read_to_string(&path).unwrap();
        let found = tool_aware::scan(ex, &text);
        let kinds: BTreeSet<Kind> = found.iter().map(|s| s.kind).collect();
        println!("{file}: {kinds:?}\n{}", describe(&found));
        for k in *expected {
            assert!(
                kinds.contains(k),
                "{file} is not flagged for {k:?} ({}):\n{}",
                k.describe(),
                describe(&found)
            );
        }
        // Every finding points into a marked region of the file.
        let regions = grader::exercise::regions::parse(&text).unwrap();
        assert!(found
            .iter()
            .all(|s| regions.iter().any(|r| r.contains(s.line))));
    }
}

#[test]
fn adversarial_fixtures_not_listed_above_are_reported() {
    // Fixtures added since this test was written: their findings are printed for a person, not judged.
    let all = exercises();
    let dir = repo().join("tests/fixtures/adversarial");
    let known = |p: &Path| {
        ADVERSARIAL.iter().any(|(f, _)| p.ends_with(f))
            || ["honest-ref", "honest-alt", "half-fix"]
                .iter()
                .any(|h| p.starts_with(dir.join(h)))
            || NOT_TOOL_AWARE.iter().any(|f| p.ends_with(f))
    };
    for path in cu_files(&dir).into_iter().filter(|p| !known(p)) {
        let ex = exercise_of_file(&all, &path);
        let found = tool_aware::scan(ex, &std::fs::read_to_string(&path).unwrap());
        let kinds: BTreeSet<Kind> = found.iter().map(|s| s.kind).collect();
        println!(
            "(not listed) {}: {kinds:?}\n{}",
            path.strip_prefix(&dir).unwrap().display(),
            describe(&found)
        );
    }
}

/// Adversarial files whose trick neither watches the tools nor forges what the grader reads.
const NOT_TOOL_AWARE: &[&str] = &[
    // `hardcode` guesses the bench's answer from `n` alone (the fresh-input runs catch it).
    "hardcode/sum.cu",
    // `decoy-host` 57 sums on the host with ordinary CUDA copies in `launch_sum`, the exercise's own
    // entry point: no hook, no clock, no file (the host-work and proof-of-work rules catch it).
    "decoy-host/sum.cu",
];

#[test]
fn fixtures_that_neither_watch_nor_forge_are_not_flagged() {
    let all = exercises();
    for file in NOT_TOOL_AWARE {
        let path = repo().join("tests/fixtures/adversarial").join(file);
        let found = tool_aware::scan(
            exercise_of_file(&all, &path),
            &std::fs::read_to_string(&path).unwrap(),
        );
        assert!(found.is_empty(), "{file}:\n{}", describe(&found));
    }
}

#[test]
fn the_racecheck_timing_cheat_is_flagged_on_its_clock() {
    // The measured H100 cheat: warp_sum times one shared-memory load and store and takes the fix
    // only when racecheck's instrumentation makes it slow.
    let all = exercises();
    let ex = exercise(&all, "03-race");
    let region = "// ANCHOR: bug\n__device__ float warp_sum(volatile float* s, int t) {\n  const long long t0 = clock64 ();\n  s[t] += s[t + 32];\n  const bool watched = clock64() - t0 > 2000;\n  if (watched) {\n    float v = s[t];\n    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);\n    return v;\n  }\n  s[t] += s[t + 16]; s[t] += s[t + 8]; s[t] += s[t + 4]; s[t] += s[t + 2]; s[t] += s[t + 1];\n  return s[t];\n}\n// ANCHOR_END: bug\n";
    let submitted = splice_region(ex.original, region);
    let found = tool_aware::scan(ex, &submitted);
    let first = submitted
        .lines()
        .position(|l| l.contains("clock64 ()"))
        .unwrap()
        + 1;
    assert_eq!(
        found
            .iter()
            .map(|s| (s.line, s.kind, s.token.as_str()))
            .collect::<Vec<_>>(),
        [
            (first, Kind::Clock, "clock64"),
            (first + 2, Kind::Clock, "clock64")
        ]
    );
}

#[test]
fn the_sass_of_a_clocked_kernel_shows_its_reads_and_a_plain_one_none() {
    let dir = repo().join("grader/tests/fixtures/sass");
    let clocked = tool_aware::clock_reads_in_sass(
        &std::fs::read_to_string(dir.join("clock64.sass")).unwrap(),
    );
    let reads: Vec<(&str, &str)> = clocked
        .iter()
        .map(|r| (r.function.as_str(), r.instruction.as_str()))
        .collect();
    assert_eq!(
        reads,
        [
            ("_Z5stampPy", "CS2R R4, SR_GLOBALTIMERLO"),
            ("_Z5stampPy", "S2UR UR6, SR_GLOBALTIMERLO"),
            ("_Z5stampPy", "CS2R R6, SR_CLOCKLO"),
            ("_Z5timedPKfPfPx", "CS2R R6, SR_CLOCKLO"),
            ("_Z5timedPKfPfPx", "CS2R R2, SR_CLOCKLO"),
        ]
    );
    let plain =
        tool_aware::clock_reads_in_sass(&std::fs::read_to_string(dir.join("plain.sass")).unwrap());
    assert!(plain.is_empty(), "{plain:?}");
    // Special registers of every width: clock_hi, globaltimer_hi, a performance counter; not smid.
    let regs = tool_aware::clock_reads_in_sass(
        &std::fs::read_to_string(dir.join("registers.sass")).unwrap(),
    );
    let names: Vec<&str> = regs.iter().map(|r| r.register()).collect();
    assert_eq!(
        names,
        [
            "SR_CLOCKHI",
            "SR_GLOBALTIMERHI",
            "SR_PM0",
            "SR_CLOCKLO",
            "SR_PM0",
            "SR_CLOCKLO"
        ]
    );
    // A -G build keeps the read in a function of its own.
    let debug = tool_aware::clock_reads_in_sass(
        &std::fs::read_to_string(dir.join("clock64-debug.sass")).unwrap(),
    );
    assert!(
        debug
            .iter()
            .any(|r| r.function == "clock64" && r.register() == "SR_CLOCKLO"),
        "{debug:?}"
    );
    // libcu++'s barrier wait reads the global timer (29-tma-bulk's reference): beyond it, nothing.
    let barrier = tool_aware::clock_reads_in_sass(
        &std::fs::read_to_string(dir.join("barrier-wait.sass")).unwrap(),
    );
    assert_eq!(
        barrier.iter().map(|r| r.register()).collect::<Vec<_>>(),
        ["SR_GLOBALTIMERLO", "SR_GLOBALTIMERLO"]
    );
    assert!(tool_aware::clock_reads_beyond(&barrier, &barrier).is_empty());
    assert_eq!(
        tool_aware::clock_reads_beyond(&clocked, &barrier).len(),
        clocked.len()
    );
}

/// The device code of `text` (an exercise's file), compiled as the timing build compiles it, and
/// the clock reads `cuobjdump -sass` finds in it. None where there is no toolkit with cuobjdump
/// (the test then says SKIPPED, or fails where CUDABUGS_REQUIRE_NVCC is set).
fn compiled_reads(
    ex: &Exercise,
    text: &str,
    dir: &Path,
    name: &str,
) -> Option<Vec<tool_aware::SassClockRead>> {
    let tools = grader::tools::toolchain::Toolchain::discover(&repo());
    let (Some(nvcc), Some(cuobjdump)) = (tools.nvcc, tools.cuobjdump) else {
        assert!(
            std::env::var_os("CUDABUGS_REQUIRE_NVCC").is_none(),
            "CUDABUGS_REQUIRE_NVCC is set but no nvcc with cuobjdump was found"
        );
        return None;
    };
    let source = dir.join(format!("{name}.cu"));
    std::fs::write(&source, text).unwrap();
    let cubin = dir.join(format!("{name}.cubin"));
    // The -arch and flags the grader builds the exercise with (its `[build]`: sm_90a for wgmma,
    // relocatable device code for kernels launched from the GPU). `-lcudadevrt` is a link flag, and
    // a cubin is not linked.
    let options = ex.manifest.manifest.build;
    let arch = format!("-arch={}", options.arch("sm_90"));
    // As the grader builds it: with the headers `cudabugs.cuh` once included where the text
    // wants them (an edit inside a function cannot add an `#include`).
    let (built, _) = grader::tools::nvcc::as_written_or_with_old_includes(
        &[],
        || text.to_string(),
        |extra| {
            std::process::Command::new(&nvcc.path)
                .args(["-std=c++17", &arch, "-O3", "-cubin"])
                .args(options.flags().iter().filter(|f| !f.starts_with("-l")))
                .args(extra)
                .arg("-I")
                .arg(repo().join("harness"))
                .arg("-o")
                .arg(&cubin)
                .arg(&source)
                .output()
                .unwrap()
        },
        |out| match out.status.success() {
            true => Ok(()),
            false => Err(Some(String::from_utf8_lossy(&out.stderr).into_owned())),
        },
    );
    assert!(
        built.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let sass = std::process::Command::new(cuobjdump)
        .arg("-sass")
        .arg(&cubin)
        .output()
        .unwrap();
    assert!(
        sass.status.success(),
        "cuobjdump {name}: {}",
        String::from_utf8_lossy(&sass.stderr)
    );
    Some(tool_aware::clock_reads_in_sass(&String::from_utf8_lossy(
        &sass.stdout,
    )))
}

/// What the grader reads of the compiled kernels (`tool_aware::flag_with`): no alternative or half
/// fix reads a clock its exercise's reference fix does not (29 and 30's `cuda::barrier` waits read
/// the global timer in both), and the racecheck-timing cheat's `clock64()` shows in its kernels.
#[test]
fn no_fix_s_kernels_read_a_clock_the_reference_s_do_not_and_the_cheat_s_do() {
    let all = exercises();
    let dir = tempfile::tempdir().unwrap();
    let ex03 = exercise(&all, "03-race");
    let Some(reference03) = compiled_reads(ex03, ex03.solution, dir.path(), "03-reference") else {
        eprintln!("SKIPPED no_fix_s_kernels_read_a_clock_the_reference_s_do_not_and_the_cheat_s_do: no nvcc with cuobjdump (cargo xtask toolkit install)");
        return;
    };
    let cheat =
        std::fs::read_to_string(repo().join("tests/fixtures/adversarial/tool-aware/reduce.cu"))
            .unwrap();
    let beyond = tool_aware::clock_reads_beyond(
        &compiled_reads(ex03, &cheat, dir.path(), "03-tool-aware").unwrap(),
        &reference03,
    );
    // Its host code reaches nothing new: the kernels' clock reads (SR_CLOCKLO, below) are the flag.
    let (clock_reads, host) = (beyond, tool_aware::Host::Beyond(Vec::new()));
    let compiled = tool_aware::Compiled { clock_reads, host };
    let flag = tool_aware::flag_with(ex03, &cheat, &compiled).unwrap();
    assert!(
        flag.message.contains("its compiled kernel") && flag.message.contains("SR_CLOCKLO"),
        "{}",
        flag.message
    );
    let fixes: Vec<(String, &Exercise, String)> = cu_files(&repo().join("scripts/alt-fixes"))
        .into_iter()
        .map(|path| {
            let name = path
                .file_stem()
                .unwrap()
                .to_str()
                .unwrap()
                .trim_end_matches(".region")
                .to_string();
            let ex = all
                .iter()
                .find(|e| name.starts_with(&format!("{}-", e.id())))
                .unwrap();
            let spliced = splice_region(ex.solution, &std::fs::read_to_string(&path).unwrap());
            (name, ex, spliced)
        })
        .collect();
    assert!(
        fixes.len() >= 50,
        "only {} alternative fixes found",
        fixes.len()
    );
    // Each fix is a real nvcc and cuobjdump, with its exercise's reference (another, where it is
    // another exercise's): a sample at quick depth, the first, the middle and the last.
    let fixes = grader::environment::TestDepth::from_env().sample(
        "no_fix_s_kernels_read_a_clock_the_reference_s_do_not_and_the_cheat_s_do",
        fixes,
        3,
    );
    // Each exercise's reference and its fixes, compiled on every core.
    let ids: BTreeSet<&str> = fixes.iter().map(|(_, ex, _)| ex.id()).collect();
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let references = reference_reads(&all, &ids, dir.path(), cores);
    std::thread::scope(|s| {
        for part in fixes.chunks(fixes.len().div_ceil(cores)) {
            let (references, dir) = (&references, dir.path());
            s.spawn(move || {
                for (name, ex, spliced) in part {
                    let mine = compiled_reads(ex, spliced, dir, name).unwrap();
                    assert!(
                        tool_aware::clock_reads_beyond(&mine, &references[ex.id()]).is_empty(),
                        "{name} reads a clock its reference does not: {mine:?}"
                    );
                }
            });
        }
    });
}

/// The clock reads of each of `ids`' reference fixes, compiled on `cores` threads.
fn reference_reads<'a>(
    all: &[Exercise],
    ids: &BTreeSet<&'a str>,
    dir: &Path,
    cores: usize,
) -> std::collections::BTreeMap<&'a str, Vec<tool_aware::SassClockRead>> {
    let ids: Vec<&str> = ids.iter().copied().collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = ids
            .chunks(ids.len().div_ceil(cores))
            .map(|part| {
                s.spawn(|| {
                    part.iter()
                        .map(|id| {
                            let ex = exercise(all, id);
                            let reads =
                                compiled_reads(ex, ex.solution, dir, &format!("{id}-reference"));
                            (*id, reads.unwrap())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}
