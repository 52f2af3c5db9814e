//! The grader's clock and checks of the timed calls (`tools::served`), driven against real
//! processes that speak the harness's side of the protocol: a C program (built here with the
//! machine's C compiler) that copies each call's input to its output, honestly or in one of the
//! ways a class tried to beat the judged call. No GPU: what is tested is what the grader sees of a
//! process it cannot trust, which is the same with or without CUDA (harness.cu's CUDA side ran on
//! an H100: book/gpu-runs/2026-11-25-trust/).

use crate::fake_harness;

use std::time::Duration;

use grader::exercise::data;
use grader::exercise::manifest::Dist;
use grader::exercise::reference::Data;
use grader::tools::runner::Exit;
use grader::tools::sandbox::Isolation;
use grader::tools::served::CallTimes;

// The fake harness (`fixtures/fake-harness.c`) has a `mode`: `honest` copies the input to the
// output, then says done; `early` takes its input, says done, and writes the answer 300 ms later;
// `die` exits during its second call; `ahead` says its second call is the third done, then hangs;
// `second` copies a stale input (the first call's) in its second call; `slow-start` sleeps 30 s
// before it is ready for its first call, `slow-end` 30 s after its last.

const N: usize = 1 << 20; // 4 MiB of f32: a large input (perturbed), a large output (sampled)

/// Run the fake harness in `mode` under the sandbox with the grader serving its calls; the
/// grader's record and each call's outputs.
fn serve(mode: &str, secret: u64) -> Option<(Exit, CallTimes, Vec<Vec<f32>>)> {
    let dir = tempfile::tempdir().unwrap();
    let bin = fake_harness::build(dir.path())?;
    let base: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 / 1000.0).collect();
    let calls = fake_harness::calls(base, Dist::Uniform { lo: 0.0, hi: 1.0 }, 3, secret);
    let run = fake_harness::serve(
        &bin,
        calls,
        mode,
        Isolation::Auto,
        true,
        Duration::from_secs(30),
    );
    let outputs = run
        .call_files
        .iter()
        .map(|p| match &data::read_outputs(p).unwrap()[0].data {
            Data::F32(v) => v.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    Some((run.finished.exit, run.times, outputs))
}

fn skipped() -> Option<(Exit, CallTimes, Vec<Vec<f32>>)> {
    eprintln!("SKIPPED: no C compiler on this machine");
    None
}

#[test]
fn every_call_gets_inputs_of_its_own_and_its_outputs_are_kept() {
    let Some((exit, times, outputs)) = serve("honest", 7).or_else(skipped) else {
        return;
    };
    assert_eq!(exit, Exit::Code(0));
    assert_eq!(
        (
            times.calls_ns.len(),
            outputs.len(),
            times.failure.as_deref()
        ),
        (3, 3, None)
    );
    assert!(
        times.calls_ns.iter().all(|ns| *ns > 0.0 && *ns < 1e9),
        "{times:?}"
    );
    assert!(
        times.changed.iter().all(|c| !c),
        "an honest call's outputs hold"
    );
    // Each call's inputs differ from the others' and from the bench's: its output (a copy of its
    // input) is unlike every other call's.
    let base: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 / 1000.0).collect();
    for (k, out) in outputs.iter().enumerate() {
        let unlike_base = out.iter().zip(&base).filter(|(a, b)| a != b).count();
        assert!(
            unlike_base > 0,
            "call {} saw the bench's inputs unchanged",
            k + 1
        );
        assert!(
            out.iter().all(|v| (0.0..1.0).contains(v)),
            "call {}'s inputs stay in the distribution",
            k + 1
        );
    }
    assert_ne!(outputs[1], outputs[2]);
    // The same session's secret gives the same calls (every version gets the same inputs); another
    // gives others.
    let (_, _, again) = serve("honest", 7).unwrap();
    assert_eq!(again, outputs);
    let (_, _, other) = serve("honest", 8).unwrap();
    assert_ne!(other[1], outputs[1]);
}

#[test]
fn a_recorded_call_comes_after_judged_calls_no_program_can_count_and_is_kept_apart() {
    let base: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 / 1000.0).collect();
    let calls = |secret: u64, recorded: bool| grader::tools::served::Calls {
        recorded,
        ..fake_harness::calls(base.clone(), Dist::Uniform { lo: 0.0, hi: 1.0 }, 3, secret)
    };
    // A program that counts its calls cannot know which one is recorded: across sessions it comes
    // after 3, 4 or 5 judged calls.
    let places: std::collections::BTreeSet<u32> = (0..64)
        .filter_map(|secret| calls(secret, true).recorded_call())
        .collect();
    assert_eq!(places, [4, 5, 6].into());
    assert_eq!(
        (calls(7, false).recorded_call(), calls(7, false).judged()),
        (None, 3),
        "without a recorded call, the bench's calls"
    );
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = fake_harness::build(dir.path()) else {
        skipped();
        return;
    };
    let run = |recorded: bool| {
        fake_harness::serve(
            &bin,
            calls(7, recorded),
            "honest",
            Isolation::Auto,
            true,
            Duration::from_secs(30),
        )
    };
    let (with, without) = (run(true), run(false));
    assert_eq!(with.finished.exit, Exit::Code(0));
    // Every judged call timed and kept, the recorded one made (the program waited for it) but apart.
    let judged = calls(7, true).judged() as usize;
    assert_eq!(
        (with.times.calls_ns.len(), with.call_files.len()),
        (judged, judged),
        "{:?}",
        with.times
    );
    let recorded = with.times.recorded_ns.expect("the recorded call's time");
    assert!(
        recorded > 0.0 && with.times.failure.is_none(),
        "{:?}",
        with.times
    );
    assert!(with.times.total_ns() > with.times.calls_ns.iter().sum::<f64>());
    // The bench's calls are the same with or without a recorded call after them.
    let read = |files: &[std::path::PathBuf]| {
        files
            .iter()
            .take(3)
            .map(|f| std::fs::read(f).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(read(&with.call_files), read(&without.call_files));
}

#[test]
fn a_done_written_out_of_turn_ends_the_calls_at_once_not_at_the_time_limit() {
    let Some((exit, times, outputs)) = serve("ahead", 17).or_else(skipped) else {
        return;
    };
    assert_eq!(
        exit,
        Exit::Signal(libc::SIGTERM),
        "ended by the grader once its calls stopped, not at its time limit"
    );
    // fd-scribble's thread wrote `done` ahead of every call, and 62's timed run waited out its
    // limit. The program hangs after writing it: a grader that waited would say its time ran out.
    assert_eq!(
        (times.calls_ns.len(), outputs.len()),
        (1, 1),
        "the first call stands"
    );
    let why = times.failure.unwrap_or_default();
    assert!(
        why.contains("written out of turn (3 where the harness writes 2)")
            && why.contains("call 2"),
        "{why}"
    );
}

#[test]
fn a_stale_answer_in_the_judged_call_is_in_its_outputs() {
    let Some((_, _, honest)) = serve("honest", 11).or_else(skipped) else {
        return;
    };
    let (exit, times, stale) = serve("second", 11).unwrap();
    assert_eq!((exit, times.calls_ns.len()), (Exit::Code(0), 3));
    // The second call copied the first call's inputs: what the grader kept of it is not what the
    // reference would compute on that call's inputs (here: its inputs).
    assert_eq!(stale[0], honest[0]);
    assert_ne!(
        stale[1], honest[1],
        "the stale second call is caught by its own outputs"
    );
    assert_eq!(stale[2], honest[2]);
}

#[test]
fn a_call_that_says_it_is_done_before_its_work_is_caught() {
    let Some((_, _, honest)) = serve("honest", 13).or_else(skipped) else {
        return;
    };
    let (_, times, outputs) = serve("early", 13).unwrap();
    // Each call's answer is right but written after the call said it was done: what the grader
    // kept of every call is the poison (NaN) or an earlier call's late answer, never its own.
    for (k, out) in outputs.iter().enumerate() {
        assert!(
            times.changed[k] || *out != honest[k],
            "call {}: an answer written after the call's end was taken as the call's",
            k + 1
        );
    }
}

#[test]
fn a_program_that_ends_mid_call_leaves_the_calls_it_made_and_why_the_rest_are_missing() {
    let Some((exit, times, outputs)) = serve("die", 17).or_else(skipped) else {
        return;
    };
    assert_eq!(exit, Exit::Code(9));
    assert_eq!((times.calls_ns.len(), outputs.len()), (1, 1));
    assert!(
        times
            .failure
            .as_deref()
            .is_some_and(|f| f.contains("during call 2")),
        "{times:?}"
    );
}

/// A timed program has the GPU alone: one that sleeps before its first call or after its last
/// is ended at its margin, not at its time limit, and says why.
#[test]
fn a_program_slow_to_start_or_to_end_is_ended_at_its_margin_not_its_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = fake_harness::build(dir.path()) else {
        skipped();
        return;
    };
    let margins = grader::tools::served::Margins {
        start: Some(Duration::from_millis(500)),
        end: Some(Duration::from_millis(500)),
    };
    for (mode, calls, why) in [
        (
            "slow-start",
            0,
            "it was not ready for its first call within 0.5 s",
        ),
        (
            "slow-end",
            3,
            "it was still running 0.5 s after its last call",
        ),
        ("honest", 3, ""),
    ] {
        let base: Vec<f32> = (0..1024).map(|i| i as f32 / 1024.0).collect();
        let run = fake_harness::serve_within(
            &bin,
            fake_harness::calls(base, Dist::Uniform { lo: 0.0, hi: 1.0 }, 3, 5),
            mode,
            (Isolation::Auto, false),
            Duration::from_secs(60),
            margins,
        );
        assert_eq!(run.times.calls_ns.len(), calls, "{mode}");
        let failure = run.times.failure.clone().unwrap_or_default();
        assert!(failure.starts_with(why), "{mode}: {failure}");
        if why.is_empty() {
            assert_eq!(run.finished.exit, Exit::Code(0), "{mode}");
        } else {
            assert_eq!(run.finished.exit, Exit::Signal(libc::SIGTERM), "{mode}");
            assert!(run.wall < Duration::from_secs(20), "{mode}: {:?}", run.wall);
        }
    }
}
