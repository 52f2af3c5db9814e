//! One file: the speed judge's tests, over one set of fixtures: an exercise from its manifest, the
//! calls as the grader's clock records them, a version's timed runs, the driver's records.

use super::outputs::on_threads;
use super::*;
use crate::engine::evidence::{evidence, ReadOnce};
use crate::engine::stages::Output;
use crate::exercise::data;
use crate::tools::ncu::{self, Measured};
use std::path::{Path, PathBuf};

#[test]
fn every_rule_says_why_and_review_rules_take_at_most_the_speed_points() {
    for rule in Rule::ALL {
        assert!(rule.why().len() > 60, "{rule:?}");
        if rule.review() {
            // A person decides; a review never takes the points of the builds or the cases.
            assert!(
                rule.withholds().iter().all(|s| matches!(
                    s,
                    GradeStage::Speed | GradeStage::NamedTool | GradeStage::OtherTools
                )),
                "{rule:?}"
            );
        }
    }
    let keys: BTreeSet<&str> = Rule::ALL.iter().map(|r| r.key()).collect();
    assert_eq!(keys.len(), Rule::ALL.len(), "keys are unique");
    for rule in Rule::ALL {
        assert_eq!(
            serde_json::to_value(rule).unwrap(),
            rule.key(),
            "reports and the journal name a rule by its key"
        );
    }
}

/// Exercise `id` from its manifest's text (no sources: the judge reads none).
fn exercise(id: &str, text: &str) -> Exercise {
    let path = format!("exercises/{id}/exercise.toml");
    let manifest = crate::exercise::manifest::parse(id, Path::new(&path), text).unwrap();
    Exercise {
        manifest,
        original: "",
        solution: "",
    }
}

fn race() -> Exercise {
    exercise(
        "03-race",
        include_str!("../../../../exercises/03-race/exercise.toml"),
    )
}

/// Whether the judge doubts `inputs`' first comparison of whole calls (`call_doubts`).
fn doubted(inputs: &JudgeInputs) -> bool {
    !call_doubts(
        inputs.ex,
        inputs.timer,
        &inputs.learner,
        &inputs.reference,
        &inputs.original,
    )
    .is_empty()
}

/// Calls as the grader's clock records them: a first call that loads the kernels, then two of
/// `wall_ms`, `cpu_ms`.
fn calls(wall_ms: f64, cpu_ms: f64) -> CallTimes {
    let ns = |ms: f64| ms * 1e6;
    CallTimes {
        calls_ns: vec![ns(3.0 * wall_ms), ns(wall_ms), ns(wall_ms)],
        cpu_ns: vec![Some(ns(3.0 * cpu_ms)), Some(ns(cpu_ms)), Some(ns(cpu_ms))],
        changed: vec![false; 3],
        gpu_memory: Some(1.0),
        ..CallTimes::default()
    }
}

/// A version's timed runs as the stages leave them: ncu's kernel time, and call timings.
fn runs(kernel_us: f64, calls: Vec<Option<CallTimes>>) -> (Output, Vec<Option<Output>>) {
    use crate::tools::runner::{Exit, Finished};
    let finished = || Finished::ended(Exit::Code(0), std::time::Duration::from_millis(500));
    let timing = Output::Timed {
        target: ncu::ProfileTarget {
            name: "t".into(),
            program: "t".into(),
            args: Vec::new(),
            kernels: Vec::new(),
            counters: Vec::new(),
            every_kernel: false,
            repeat: 1,
        },
        measured: Ok(Measured {
            nanoseconds: Some(kernel_us * 1e3),
            launches: Vec::new(),
            command: String::new(),
            finished: finished(),
            attempts: 1,
            busy: false,
            tool_failure: None,
            counters: None,
        }),
        calls: None,
        outputs: Vec::new(),
        kept: false,
    };
    let called = |times: Option<CallTimes>| Output::Called {
        command: String::new(),
        run: Ok(finished()),
        failure: times
            .is_none()
            .then(|| "the program exited before its call 2".into()),
        times,
        timeline: None,
        driver: None,
        outputs: Vec::new(),
        kept: false,
    };
    (timing, calls.into_iter().map(|c| Some(called(c))).collect())
}

#[test]
fn a_whole_call_slowed_by_a_busy_host_is_timed_again_and_judged_on_the_quickest_runs() {
    let ex = race();
    let rules = |learner: &(Output, Vec<Option<Output>>),
                 reference: &(Output, Vec<Option<Output>>)| {
        let inputs = JudgeInputs {
            ex: &ex,
            timer: Timer::profiled(&ex),
            learner: evidence(Some(&learner.0), learner.1[0].as_ref()),
            reference: evidence(Some(&reference.0), reference.1[0].as_ref()),
            original: Timed::default(),
            peak: None,
            perf: None,
        };
        let doubted = doubted(&inputs);
        fn all(r: &(Output, Vec<Option<Output>>)) -> TimedRuns<'_> {
            TimedRuns {
                timing: Some(&r.0),
                calls: r.1.iter().map(Option::as_ref).collect(),
            }
        }
        let none = TimedRuns {
            timing: None,
            calls: Vec::new(),
        };
        let verdict = judge_runs(&inputs, all(learner), all(reference), none);
        let rules: Vec<Rule> = verdict.flags.iter().map(|f| f.rule).collect();
        (doubted, rules)
    };
    let wall = |ms: f64| Some(calls(ms, ms));
    // The H100 on 2026-11-25, two graders on one host: the reference fix of 03 as a student,
    // 19.95 ms a call against the reference's 12.30 ms timed at another moment, the kernels
    // 40.0 us against 40.1 us (book/gpu-runs/2026-11-25-trust/). Timed again back to back,
    // both take their usual time: no host work.
    let reference = runs(40.1, vec![wall(12.30), wall(12.41), wall(12.22)]);
    let honest = runs(40.0, vec![wall(19.95), wall(12.52), wall(12.38)]);
    let (doubted, flagged) = rules(&honest, &reference);
    assert!(doubted);
    assert!(!flagged.contains(&Rule::HostWork), "{flagged:?}");
    // Not timed again (no confirming run): the first comparison stands.
    let (honest_once, reference_once) =
        (runs(40.0, vec![wall(19.95)]), runs(40.1, vec![wall(12.30)]));
    assert!(rules(&honest_once, &reference_once)
        .1
        .contains(&Rule::HostWork));
    // The quickest runs alone would still weigh badly (16.5 ms against 12.22 ms), but in the first
    // round both were slow together (16.5 and 16.4 ms): the host was busy, not the program. A rule
    // of the whole call stands only where every round shows it.
    let busy_round = runs(40.1, vec![wall(12.30), wall(16.40), wall(12.22)]);
    let honest_busy = runs(40.0, vec![wall(19.95), wall(16.50), wall(17.00)]);
    let (doubted, flagged) = rules(&honest_busy, &busy_round);
    assert!(doubted && !flagged.contains(&Rule::HostWork), "{flagged:?}");
    // decoy-host adds the input up on the host: slow every time.
    let decoy = runs(40.0, vec![wall(22.31), wall(22.52), wall(22.40)]);
    assert!(rules(&decoy, &reference).1.contains(&Rule::HostWork));
    // A confirming run that failed settles nothing: the first comparison stands.
    let failed_again = runs(40.0, vec![wall(19.95), None, wall(12.38)]);
    assert!(rules(&failed_again, &reference).1.contains(&Rule::HostWork));
    // The CPU time is confirmed the same way: threaded-host's 16 threads every time.
    let threads = |wall_ms: f64| Some(calls(wall_ms, 28.8));
    let threaded = runs(40.0, vec![threads(9.84), threads(9.80), threads(9.90)]);
    assert!(rules(&threaded, &reference).1.contains(&Rule::HostCpu));
}

#[test]
fn outputs_are_compared_in_order_and_never_more_than_eight_calls_at_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let items: Vec<usize> = (0..12).collect();
    // Three checks' comparisons side by side, as grade judges pairs on every core.
    let runs: Vec<Vec<usize>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(|| {
                    on_threads(&items, |&i| {
                        let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(n, Ordering::SeqCst);
                        std::thread::yield_now();
                        now.fetch_sub(1, Ordering::SeqCst);
                        i * 10
                    })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in runs {
        assert_eq!(r, items.iter().map(|i| i * 10).collect::<Vec<_>>());
    }
    assert!((1..=8).contains(&most.load(Ordering::SeqCst)));
}

#[test]
fn a_call_clocked_fix_just_short_of_its_target_is_timed_again_with_the_original() {
    let ex = exercise(
        "68-graphs",
        include_str!("../../../../exercises/68-graphs/exercise.toml"),
    );
    let target = *ex
        .manifest
        .manifest
        .perf
        .as_ref()
        .unwrap()
        .speedup
        .get_ref();
    let wall = |us: f64| Some(calls(us / 1e3, us / 1e3));
    // An H100, 2026-11-26: one of five checks of the reference fix timed its call at 615 us
    // against the original's 730 (1.19x, the target 1.2x); the others 370-406 us.
    let original = runs(700.0, vec![wall(730.0), wall(742.0), wall(735.0)]);
    let reference = runs(620.0, vec![wall(380.0), wall(376.0), wall(379.0)]);
    let slow_first = runs(620.0, vec![wall(615.0), wall(372.0), wall(381.0)]);
    let judged = |learner: &(Output, Vec<Option<Output>>), timed_again: bool| {
        let inputs = JudgeInputs {
            ex: &ex,
            timer: Timer::profiled(&ex),
            learner: evidence(Some(&learner.0), learner.1[0].as_ref()),
            reference: evidence(Some(&reference.0), reference.1[0].as_ref()),
            original: evidence(Some(&original.0), original.1[0].as_ref()),
            peak: None,
            perf: None,
        };
        let doubted = doubted(&inputs);
        let n = if timed_again { 3 } else { 1 };
        fn all(r: &(Output, Vec<Option<Output>>), n: usize) -> TimedRuns<'_> {
            TimedRuns {
                timing: Some(&r.0),
                calls: r.1.iter().take(n).map(Option::as_ref).collect(),
            }
        }
        let v = judge_runs(
            &inputs,
            all(learner, n),
            all(&reference, n),
            all(&original, n),
        );
        (doubted, v.speed.and_then(|s| s.speedup_over_original))
    };
    let (doubted, once) = judged(&slow_first, false);
    assert!(doubted && once.unwrap() < target, "{once:?}");
    let (_, again) = judged(&slow_first, true);
    assert!(
        again.unwrap() > 1.9,
        "judged on the quickest runs: {again:?}"
    );
    // Far below the target (the untouched file, 1.0x at best): no doubt, nothing timed again.
    let untouched = runs(700.0, vec![wall(1300.0), wall(1310.0), wall(1290.0)]);
    assert!(!judged(&untouched, false).0);
}

#[test]
fn host_threads_hidden_under_the_copy_show_in_the_cpu_time() {
    let ex = race();
    let rules = |learner: &CallTimes, reference: &CallTimes| {
        let timed = |c| Timed {
            call: Some(c),
            ..Timed::default()
        };
        let inputs = JudgeInputs {
            ex: &ex,
            timer: Timer::profiled(&ex),
            learner: timed(learner),
            reference: timed(reference),
            original: Timed::default(),
            peak: None,
            perf: None,
        };
        judge(&inputs)
            .flags
            .into_iter()
            .map(|f| f.rule)
            .collect::<Vec<_>>()
    };
    // Medians of six processes each on an H100 (scripts/gpu-calls-experiment.py, alone).
    let reference = calls(9.18, 9.30);
    assert!(
        rules(&calls(9.84, 28.80), &reference).contains(&Rule::HostCpu),
        "threaded-host: 16 threads under the copy"
    );
    assert!(
        rules(&calls(22.31, 22.65), &reference).contains(&Rule::HostCpu),
        "decoy-host: the sum on one thread"
    );
    assert!(
        !rules(&calls(8.58, 8.72), &reference).contains(&Rule::HostCpu),
        "honest-alt"
    );
    // Timed while three other processes started up beside each (gate-4): slower, still told apart.
    assert!(!rules(&calls(17.33, 13.84), &calls(13.71, 12.32)).contains(&Rule::HostCpu));
    assert!(rules(&calls(20.28, 33.04), &calls(13.71, 12.32)).contains(&Rule::HostCpu));
    // A run without a cgroup has no CPU time: nothing is judged by it.
    let unknown = CallTimes {
        cpu_ns: vec![None; 3],
        ..calls(9.0, 0.0)
    };
    assert!(!rules(&unknown, &unknown).contains(&Rule::HostCpu));
}

/// A timeline as the harness writes it for a process of three judged calls and a recorded fourth:
/// each call's launches, the recorded call's own.
fn recorded(launched: [u64; 4]) -> crate::tools::timeline::Timeline {
    let mut text = String::new();
    for (k, n) in launched.iter().enumerate() {
        if k == 3 {
            text.push_str("call 3 60000\n");
        }
        text.push_str(&format!("launched {k} {n}\n"));
    }
    crate::tools::timeline::Timeline::parse(&text).unwrap()
}

#[test]
fn a_fix_run_only_in_the_recorded_call_launches_less_there_and_loses_its_speed() {
    let ex = exercise(
        "62-launches",
        include_str!("../../../../exercises/62-launches/exercise.toml"),
    );
    // Calls of 62 on an H200 (book/gpu-runs/2026-11-29-traced-47/), each with the recorded call:
    // the timeline's events and CUPTI make it the longer one.
    let with_recorded = |judged_ms: f64, recorded_ms: f64| CallTimes {
        recorded_ns: Some(recorded_ms * 1e6),
        ..calls(judged_ms, judged_ms)
    };
    let judged = |learner: &CallTimes, timeline: &crate::tools::timeline::Timeline| {
        let (original, reference) = (with_recorded(0.49, 1.48), with_recorded(0.056, 0.238));
        let (fused, per_step) = (recorded([1, 1, 1, 1]), recorded([96, 96, 96, 96]));
        let timed = |c, t| Timed {
            call: Some(c),
            timeline: Some(t),
            ..Timed::default()
        };
        judge(&JudgeInputs {
            ex: &ex,
            timer: Timer::profiled(&ex),
            learner: timed(learner, timeline),
            reference: timed(&reference, &fused),
            original: timed(&original, &per_step),
            peak: None,
            perf: None,
        })
    };
    let flagged = |v: &Verdict| v.flags.iter().any(|f| f.rule == Rule::RecordedCall);
    // The half-fix, honest: 48 launches in every call, its recorded call the longest (on the H200
    // the ratio-to-the-reference version of this rule flagged it).
    let half = judged(&with_recorded(0.28, 0.64), &recorded([48, 48, 48, 48]));
    assert!(!flagged(&half), "{:?}", half.flags);
    // A graph built in the first call and launched after: fewer launches after the first call,
    // the same in the recorded one.
    let graph = judged(&with_recorded(0.06, 0.24), &recorded([96, 1, 1, 1]));
    assert!(!flagged(&graph), "{:?}", graph.flags);
    // traced-guess, guessed right: the half-fix in the judged calls, the fused kernel in the
    // recorded one, which the recording's own cost keeps from looking quicker.
    let guessed = judged(&with_recorded(0.28, 0.24), &recorded([48, 48, 48, 1]));
    assert!(flagged(&guessed), "{:?}", guessed.flags);
    assert!(guessed.withheld(), "its speed is left to a person");
    // Fewer launches is not needed where the recorded call is far quicker than every judged one.
    let quick = judged(&with_recorded(0.28, 0.1), &recorded([48, 48, 48, 48]));
    assert!(flagged(&quick), "{:?}", quick.flags);
    // Guessed wrong: the fused kernel ran in a judged call, the half-fix in the others (and in the
    // recorded one, so its launches miss the goal). The quickest judged call is not its time.
    let wrong = CallTimes {
        calls_ns: vec![0.28e6, 0.05e6, 0.28e6],
        recorded_ns: Some(0.64e6),
        ..calls(0.28, 0.28)
    };
    let v = judged(&wrong, &recorded([48, 1, 48, 48]));
    assert!(
        v.flags.iter().any(|f| f.rule == Rule::UnevenRepeats) && v.withheld(),
        "{:?}",
        v.flags
    );
    // Honest calls that vary as a busy host makes them (68's reference on an H100: 615 us against
    // 370-406 us).
    let busy = CallTimes {
        calls_ns: vec![0.426e6, 0.042e6, 0.066e6],
        recorded_ns: Some(0.2e6),
        ..calls(0.042, 0.04)
    };
    assert!(!judged(&busy, &recorded([1, 1, 1, 1]))
        .flags
        .iter()
        .any(|f| matches!(f.rule, Rule::UnevenRepeats | Rule::RecordedCall)));
}

#[test]
fn where_the_clock_is_the_call_the_whole_call_is_judged_and_host_time_is_not_a_rule() {
    let ex = exercise(
        "62-launches",
        include_str!("../../../../exercises/62-launches/exercise.toml"),
    );
    // The H100's calls (book/gpu-runs/2026-11-24-perf3/): the original 0.426 ms, the fix 0.042 ms.
    let judged = |learner: &CallTimes| {
        let (original, reference) = (calls(0.426, 0.42), calls(0.042, 0.04));
        let timed = |c| Timed {
            call: Some(c),
            ..Timed::default()
        };
        judge(&JudgeInputs {
            ex: &ex,
            timer: Timer::profiled(&ex),
            learner: timed(learner),
            reference: timed(&reference),
            original: timed(&original),
            peak: None,
            perf: None,
        })
    };
    // The fix: 10x the original's whole call, almost all of it outside any kernel ncu would time.
    let fixed = judged(&calls(0.042, 0.04));
    assert_eq!(fixed.fraction, 1.0, "{}", fixed.summary);
    assert!(
        fixed.summary.contains("10.14x the original (whole call)"),
        "{}",
        fixed.summary
    );
    assert!(
        !fixed.flags.iter().any(|f| f.rule == Rule::HostWork),
        "{:?}",
        fixed.flags
    );
    // One launch per step instead of two (the half-fix, 0.282 ms): faster, short of the target.
    let half = judged(&calls(0.282, 0.28));
    assert!(
        half.fraction > 0.0 && half.fraction < 1.0,
        "{}",
        half.summary
    );
    // Waiting spins here: a half-fix's 17 ms of spinning is no host work, 16 threads beside
    // the copies are.
    let rules = |learner: &CallTimes| {
        judged(learner)
            .flags
            .into_iter()
            .map(|f| f.rule)
            .collect::<Vec<_>>()
    };
    assert!(!rules(&calls(0.282, 0.285)).contains(&Rule::HostCpu));
    assert!(
        rules(&calls(0.042, 8.6)).contains(&Rule::HostCpu),
        "8.56 ms of CPU beyond a 0.042 ms call"
    );
    // A tick charged to the spinning thread inside a short call is not host work: 67-zero-copy's
    // reference fix, 4.04 ms charged in a call of 1.57 ms on an H100.
    assert!(!rules(&calls(1.57, 4.04)).contains(&Rule::HostCpu));
    // No call times: no time at all, whatever ncu measured.
    let none = judge(&JudgeInputs {
        ex: &ex,
        timer: Timer::profiled(&ex),
        learner: Timed {
            call_failure: Some("the program failed"),
            ..Timed::default()
        },
        reference: Timed::default(),
        original: Timed::default(),
        peak: None,
        perf: None,
    });
    assert!(
        none.speed.is_none()
            && none
                .summary
                .contains("whole call was not timed (the program failed)"),
        "{}",
        none.summary
    );
}

/// One f32 buffer `total` as the harness writes outputs (see data::read_outputs), in `dir`.
fn write_total(dir: &Path, name: &str, total: f32) -> PathBuf {
    use crate::exercise::reference::Data;
    let path = dir.join(name);
    let mut bytes = b"CBOT".to_vec();
    bytes.extend(
        1u32.to_le_bytes()
            .into_iter()
            .chain(1u32.to_le_bytes())
            .chain(5u16.to_le_bytes()),
    );
    bytes.extend(
        b"total"
            .iter()
            .copied()
            .chain([crate::exercise::dtype::DType::F32.code()])
            .chain(1u64.to_le_bytes())
            .chain(total.to_le_bytes()),
    );
    std::fs::write(&path, bytes).unwrap();
    assert!(matches!(&data::read_outputs(&path).unwrap()[0].data, Data::F32(v) if v == &[total]));
    path
}

/// Three calls' outputs, `<prefix>1.out` to `<prefix>3.out`, of the `totals`.
fn three_calls(dir: &Path, prefix: &str, totals: [f32; 3]) -> Vec<PathBuf> {
    (1..=3)
        .zip(totals)
        .map(|(n, total)| write_total(dir, &format!("{prefix}{n}.out"), total))
        .collect()
}

/// The flags the judge raises on `learner` against `reference` (no original, no peak).
fn flags_of(ex: &Exercise, learner: Timed, reference: Timed) -> Vec<Flag> {
    judge(&JudgeInputs {
        ex,
        timer: Timer::profiled(ex),
        learner,
        reference,
        original: Timed::default(),
        peak: None,
        perf: None,
    })
    .flags
}

#[test]
fn the_reference_outputs_kept_once_read_judge_every_learner_the_same() {
    let ex = race();
    let dir = tempfile::tempdir().unwrap();
    // Three calls each: the reference's, an honest learner's, and one that is wrong in its
    // second call only (the judged one, had it been the fastest).
    let theirs = three_calls(dir.path(), "r", [5000.0, 4000.0, 4500.0]);
    let right = three_calls(dir.path(), "a", [5000.0, 4000.0, 4500.0]);
    let lazy = three_calls(dir.path(), "b", [5000.0, 5000.0, 4500.0]);
    let kept = ReadOnce::default();
    let judged = |mine: &[PathBuf], reference: &[PathBuf], late: Option<&CallTimes>| {
        let learner = Timed {
            ncu_outputs: mine,
            ncu_calls: late,
            ..Timed::default()
        };
        let reference = Timed {
            ncu_outputs: reference,
            read_once: Some(&kept),
            ..Timed::default()
        };
        flags_of(&ex, learner, reference)
    };
    let timed_outputs = |flags: &[Flag]| {
        flags
            .iter()
            .find(|f| f.rule == Rule::TimedOutputs)
            .map(|f| f.message.clone())
    };
    assert_eq!(timed_outputs(&judged(&right, &theirs, None)), None);
    // Read once: gone from the disk, the reference's outputs still judge the next learner.
    for f in &theirs {
        std::fs::remove_file(f).unwrap();
    }
    let why = timed_outputs(&judged(&lazy, &theirs, None)).expect("the lazy second call is caught");
    assert!(
        why.starts_with("call 2 of the run under ncu: total[0] = 5000"),
        "{why}"
    );
    assert_eq!(timed_outputs(&judged(&right, &theirs, None)), None);
    assert!(
        timed_outputs(&judged(&right[..2], &theirs, None))
            .is_some_and(|w| w.contains("2 of its 3 calls")),
        "a call's outputs missing"
    );
    // Right outputs, but written after the call said it was done.
    let late = CallTimes {
        changed: vec![false, true, false],
        ..calls(1.0, 1.0)
    };
    assert!(timed_outputs(&judged(&right, &theirs, Some(&late)))
        .is_some_and(|w| w.contains("call 2 of the run under ncu went on writing")));

    // The reference fix's profile kept from an earlier check (no outputs under ncu): its
    // whole calls of this check, the same calls, judge the learner's calls under ncu.
    let fresh = three_calls(dir.path(), "c", [5000.0, 4000.0, 4500.0]);
    let against_calls = |mine: &[PathBuf]| {
        let learner = Timed {
            ncu_outputs: mine,
            call_outputs: &right,
            ..Timed::default()
        };
        let reference = Timed {
            call_outputs: &fresh,
            ..Timed::default()
        };
        timed_outputs(&flags_of(&ex, learner, reference))
    };
    assert_eq!(against_calls(&right), None);
    assert!(against_calls(&lazy)
        .is_some_and(|w| w.starts_with("call 2 of the run under ncu: total[0] = 5000")));
}

#[test]
fn kernels_that_run_slower_outside_ncu_than_the_reference_s_do_lose_the_speed_points() {
    let ex = exercise(
        "57-reduction",
        include_str!("../../../../exercises/57-reduction/exercise.toml"),
    );
    // CUPTI's records of three plain calls whose kernels took `us` each (the first, which loads
    // the kernels, far slower): the format harness/driver.cuh writes.
    let traced = |us: [f64; 3]| {
        let mut text = String::from("driver ok\n");
        for (i, t) in us.iter().enumerate() {
            text += &format!(
                "call {i}\ngpu kernel 7 1000 {} 0 {} sum\n",
                1000.0 + t * 1e3,
                i + 1
            );
        }
        crate::tools::driver::Driver::parse(&text).unwrap()
    };
    let with_driver = |(timing, calls): (Output, Vec<Option<Output>>), plain_us: [f64; 3]| {
        let calls = calls
            .into_iter()
            .map(|c| match c {
                Some(Output::Called {
                    command,
                    run,
                    times,
                    timeline,
                    outputs,
                    failure,
                    kept,
                    ..
                }) => Some(Output::Called {
                    command,
                    run,
                    times,
                    timeline,
                    driver: Some(Ok(traced(plain_us))),
                    outputs,
                    failure,
                    kept,
                }),
                other => other,
            })
            .collect();
        (timing, calls)
    };
    let verdict = |learner: &(Output, Vec<Option<Output>>),
                   reference: &(Output, Vec<Option<Output>>)| {
        judge(&JudgeInputs {
            ex: &ex,
            timer: Timer::profiled(&ex),
            learner: evidence(Some(&learner.0), learner.1[0].as_ref()),
            reference: evidence(Some(&reference.0), reference.1[0].as_ref()),
            original: Timed::default(),
            peak: None,
            perf: None,
        })
    };
    let wall = || Some(calls(1.0, 1.0));
    // The reference fix: 40 us under ncu at base clocks, 31 us in the plain calls at boost clocks.
    let reference = with_driver(runs(40.0, vec![wall()]), [90.0, 31.0, 31.5]);
    // An honest fix a little slower than the reference, the same way in both.
    let honest = with_driver(runs(44.0, vec![wall()]), [95.0, 34.0, 34.2]);
    let v = verdict(&honest, &reference);
    assert!(
        !v.flags.iter().any(|f| f.rule == Rule::FasterUnderNcu),
        "{:?}",
        v.flags
    );
    assert_eq!(
        v.speed.as_ref().unwrap().learner_plain_kernel_ns,
        Some(34_000.0)
    );
    // ncu-kernel: the reference kernel under ncu, the original's (7.8x slower) otherwise.
    let cheat = with_driver(runs(40.5, vec![wall()]), [400.0, 243.0, 244.0]);
    let v = verdict(&cheat, &reference);
    let flag = v
        .flags
        .iter()
        .find(|f| f.rule == Rule::FasterUnderNcu)
        .expect("flagged");
    assert!(
        flag.message.contains("243.0 us a call outside ncu"),
        "{}",
        flag.message
    );
    assert!(v.withheld(), "no speed credit");
    // Untraced (no CUPTI in the toolkit): no evidence, no flag.
    let untraced = runs(40.5, vec![wall()]);
    assert!(!verdict(&untraced, &reference)
        .flags
        .iter()
        .any(|f| f.rule == Rule::FasterUnderNcu));
}

/// The driver's records of three plain calls (harness/driver.cuh's format): in each, the named
/// kernel `block_sum` for `us[k]` microseconds, and `other` kernels beside it where named.
fn driver_calls(us: [f64; 3], other: Option<&str>) -> crate::tools::driver::Driver {
    let mut text = String::from("driver ok\n");
    let mut corr = 1;
    for (k, t) in us.iter().enumerate() {
        let start = 1e9 * (k + 1) as f64;
        text += &format!("call {}\n", k + 1);
        if *t > 0.0 {
            text += &format!(
                "gpu kernel 7 {start} {} 0 {corr} block_sum\n",
                start + t * 1e3
            );
            corr += 1;
        }
        if let Some(name) = other {
            let s = start + 1e6;
            text += &format!("gpu kernel 7 {s} {} 0 {corr} {name}\n", s + 2e3);
            corr += 1;
        }
    }
    crate::tools::driver::Driver::parse(&text).unwrap()
}

/// grade's bug track, timed by the driver: no ncu run, the judged time every kernel of the plain
/// calls (the least after the first), the rules read from the same records.
#[test]
fn where_the_driver_times_the_kernels_the_plain_calls_are_judged_without_ncu() {
    let ex = race();
    let clock = calls(1.0, 1.0);
    let reference = driver_calls([90.0, 40.0, 41.0], None);
    let judged = |learner: &crate::tools::driver::Driver| {
        let timed = |d| Timed {
            call: Some(&clock),
            driver: Some(d),
            ..Timed::default()
        };
        let inputs = JudgeInputs {
            ex: &ex,
            timer: Timer::Driver,
            learner: timed(learner),
            reference: timed(&reference),
            original: Timed::default(),
            peak: None,
            perf: None,
        };
        (judge(&inputs), doubted(&inputs))
    };
    let rules = |v: &Verdict| v.flags.iter().map(|f| f.rule).collect::<Vec<_>>();
    // A fix 1.2x the reference's: the points, no rule (no ncu run is missed), no doubt.
    let (fix, doubted) = judged(&driver_calls([100.0, 48.0, 49.0], None));
    assert_eq!(fix.status, Status::Passed, "{}", fix.summary);
    assert!(rules(&fix).is_empty(), "{:?}", fix.flags);
    assert!(!doubted);
    assert!(
        fix.summary.contains("the driver recorded"),
        "{}",
        fix.summary
    );
    let sp = fix.speed.unwrap();
    assert_eq!((sp.learner_ns, sp.reference_ns), (48e3, 40e3));
    // 1.8x: past the target by less than the plain calls' noise, so timed again before it stands.
    let (slow, doubted) = judged(&driver_calls([150.0, 72.0, 73.0], None));
    assert_eq!(slow.status, Status::Failed);
    assert!(doubted);
    // Work in a kernel the exercise does not name counts in the time and is named.
    let (helper, _) = judged(&driver_calls([100.0, 20.0, 20.0], Some("helper")));
    assert_eq!(helper.speed.as_ref().unwrap().learner_ns, 22e3);
    assert!(rules(&helper).contains(&Rule::UnnamedKernels));
    // A judged call that launched nothing of the exercise's: the work does not split into calls.
    let (skipping, _) = judged(&driver_calls([100.0, 45.0, 0.0], Some("helper")));
    assert!(
        rules(&skipping).contains(&Rule::UnevenRepeats),
        "{:?}",
        skipping.flags
    );
    // No record of the GPU's work: no time, and it says so.
    let none = judge(&JudgeInputs {
        ex: &ex,
        timer: Timer::Driver,
        learner: Timed {
            call: Some(&clock),
            ..Timed::default()
        },
        reference: Timed {
            call: Some(&clock),
            driver: Some(&reference),
            ..Timed::default()
        },
        original: Timed::default(),
        peak: None,
        perf: None,
    });
    assert!(none.speed.is_none() && none.summary.contains("no record of the GPU's work"));
}

/// A call timing as the stage leaves it: calls of `wall_ms` using `cpu_ms` of CPU, each with one
/// kernel of `kernel_us` as the driver recorded it (twice that in the first call).
fn called(wall_ms: f64, cpu_ms: f64, kernel_us: f64) -> Option<Output> {
    use crate::tools::runner::{Exit, Finished};
    Some(Output::Called {
        command: String::new(),
        run: Ok(Finished::ended(
            Exit::Code(0),
            std::time::Duration::from_millis(500),
        )),
        failure: None,
        times: Some(calls(wall_ms, cpu_ms)),
        timeline: None,
        driver: Some(Ok(driver_calls(
            [2.0 * kernel_us, kernel_us, kernel_us],
            None,
        ))),
        outputs: Vec::new(),
        kept: false,
    })
}

/// 03-race's learner against its reference fix over three call timings each (the first runs, then
/// two confirming rounds), timed by the driver: whether the first runs were doubted, and the verdict.
fn judged_over_rounds(
    learner: &[Option<Output>; 3],
    reference: &[Option<Output>; 3],
) -> (bool, Verdict) {
    let ex = race();
    let inputs = JudgeInputs {
        ex: &ex,
        timer: Timer::Driver,
        learner: evidence(None, learner[0].as_ref()),
        reference: evidence(None, reference[0].as_ref()),
        original: Timed::default(),
        peak: None,
        perf: None,
    };
    fn runs(r: &[Option<Output>; 3]) -> Vec<Option<&Output>> {
        r.iter().map(Option::as_ref).collect()
    }
    let verdict = judge_runs(
        &inputs,
        TimedRuns {
            timing: None,
            calls: runs(learner),
        },
        TimedRuns {
            timing: None,
            calls: runs(reference),
        },
        TimedRuns {
            timing: None,
            calls: Vec::new(),
        },
    );
    (doubted(&inputs), verdict)
}

/// A program that works on the host in one of its call timings (its kernels idle, its call slow)
/// and honestly, with slow kernels, in the others: every round but one is clean, so host-work does
/// not stand, and the kernels judged are those of the run with the quickest call, the honest one.
/// Ranked by their kernels, the faked run would have been judged and passed.
#[test]
fn a_program_that_fakes_one_round_is_judged_on_its_honest_rounds() {
    let traced = |wall_ms: f64, kernel_us: f64| called(wall_ms, wall_ms, kernel_us);
    // The reference: 40 us of kernels, 12 ms calls, in each of the three rounds.
    let reference = [traced(12.3, 40.0), traced(12.4, 40.0), traced(12.2, 40.0)];
    // The learner: its own kernels take 160 us (4x, no speed credit); in its first run it sums on
    // the host instead, with a 40 us kernel of nothing and a 30 ms call.
    let learner = [traced(30.0, 40.0), traced(12.6, 160.0), traced(12.5, 160.0)];
    let (doubted, verdict) = judged_over_rounds(&learner, &reference);
    assert!(doubted, "the first run's host work is doubted");
    let speed = verdict.speed.expect("timed");
    assert_eq!(speed.learner_ns, 160e3, "judged on an honest run");
    assert_eq!(verdict.status, Status::Failed);
}

#[test]
fn kernels_that_read_managed_inputs_are_not_held_to_their_dram_reads() {
    let text = include_str!("../../../../exercises/34-managed-race/exercise.toml");
    let managed = exercise("34-managed-race", text);
    assert!(managed.manifest.manifest.timing.managed_inputs);
    let unmanaged = exercise(
        "34-managed-race",
        &text.replace("managed_inputs = true\n", ""),
    );
    assert!(!unmanaged.manifest.manifest.timing.managed_inputs);
    let read = |bytes: f64| super::audit::Audit {
        named_launched: true,
        dram_read: Some(bytes),
        ..Default::default()
    };
    let rules = |ex: &Exercise| {
        let inputs = JudgeInputs {
            ex,
            timer: Timer::profiled(ex),
            learner: Timed::default(),
            reference: Timed::default(),
            original: Timed::default(),
            peak: None,
            perf: None,
        };
        // 34's fix on the H200, twice in one `verify`: 80.5 kB as the learner, 177.8 kB as the
        // reference, of 262.1 kB of inputs.
        let (learner, reference) = (read(80.5e3), read(177.8e3));
        kernel_rules(
            &inputs,
            [&learner, &reference, &reference],
            1,
            262.1e3,
            177.8e3,
        )
        .into_iter()
        .map(|f| f.rule)
        .collect::<Vec<_>>()
    };
    assert!(!rules(&managed).contains(&Rule::ProofOfWork));
    assert!(rules(&unmanaged).contains(&Rule::ProofOfWork));
}

#[test]
fn a_rule_of_the_whole_call_that_only_the_quickest_runs_paired_show_does_not_stand() {
    // An H200 bench (book/gpu-runs/2026-11-30-hog-50/2-rerun-alone-bench): a verbatim copy of
    // 02-bounds' reference fix was doubted on its first runs and timed again; its quickest call
    // (6.91 ms, 8.14 ms of CPU) was set against the reference's quickest (6.35 ms, 4.07 ms of CPU,
    // a call whose waits slept), from another round, and `host-cpu` stood though no round showed it.
    let call = |wall_ms: f64, cpu_ms: f64| called(wall_ms, cpu_ms, 30.0);
    // First runs: the learner's call 11 ms against 7.5 ms (doubted: host work); then two rounds,
    // each even: the learner 6.9 ms and 8.1 ms of CPU against 7.0 ms and 8.0 ms, then 7.6 ms and
    // 7.9 ms against 6.35 ms and 4.0 ms.
    let learner = [call(11.0, 12.0), call(6.9, 8.1), call(7.6, 7.9)];
    let reference = [call(7.5, 8.2), call(7.0, 8.0), call(6.35, 4.0)];
    let flags = |l: &Option<Output>, r: &Option<Output>| {
        !against_reference_call(
            &evidence(None, l.as_ref()),
            &evidence(None, r.as_ref()),
            false,
        )
        .is_empty()
    };
    assert!(!flags(&learner[1], &reference[1]) && !flags(&learner[2], &reference[2]));
    assert!(
        flags(&learner[1], &reference[2]),
        "the quickest of each, from two rounds, look like host work on the CPU"
    );
    let (doubted, verdict) = judged_over_rounds(&learner, &reference);
    assert!(doubted);
    assert!(
        verdict.flags.is_empty(),
        "no round showed it: {:?}",
        verdict.flags
    );
}
