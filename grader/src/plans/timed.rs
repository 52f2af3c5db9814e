//! What the timed phase of the plans that judge a whole call against the reference fix's (`check`,
//! `grade`) weighs, written once; the session runs it (`session::Phase::timed`): ncu and the whole
//! calls alone on the GPU, the measurements kept between plans held to the reference fix's fresh
//! call, and the rounds that confirm a doubted call. A call that weighs badly against the reference
//! fix's, each timed once at its own moment, is timed again with the reference's, back to back,
//! while the GPU is still the plan's alone, before a rule may fail it. A classmate's copies or
//! builds, or the GPU's own moods, must not cost an honest file its points.

use crate::engine::evidence;
use crate::engine::plan::{Stage, StageKind, Timer};
use crate::engine::scheduler::Results;
use crate::exercise::workbook::Exercise;
use crate::judge::speed;

/// What a timed phase weighs (`session::Phase::timed`): the reference fix's fresh whole call that
/// the kept measurements are held to (`scheduler::keep_or_measure_again`), and whose doubted calls
/// are confirmed, weighed how.
pub struct TimedPhase<'a> {
    pub anchor: Stage,
    pub weighed: Weighed<'a>,
    pub candidates: &'a [usize],
}

/// Whose whole calls are weighed: the exercise and its clock, the reference fix's and the
/// original's subjects, and the batch their first runs were timed in (`Stage::again`).
pub struct Weighed<'a> {
    pub ex: &'a Exercise,
    pub timer: Timer,
    pub reference: usize,
    pub original: Option<usize>,
    pub batch: u32,
}

/// Which of `candidates` have a first whole call `speed::call_doubts` doubts against the reference
/// fix's (and the original's) first runs, and that ran all their calls, and why.
pub(super) fn doubted(
    results: &Results,
    weighed: &Weighed,
    candidates: &[usize],
) -> Vec<(usize, Vec<String>)> {
    let first = |i: usize| {
        evidence::evidence(
            results.get_run(&Stage::again(i, StageKind::Timing, weighed.batch)),
            results.get_run(&Stage::again(i, StageKind::Call, weighed.batch)),
        )
    };
    let reference = first(weighed.reference);
    let original = weighed
        .original
        .map_or_else(evidence::Timed::default, first);
    candidates
        .iter()
        .filter_map(|&i| {
            let learner = evidence::evidence(
                results.get(i, StageKind::Timing),
                results.get(i, StageKind::Call),
            );
            // A call run that failed (ended at its margin, out of time, crashed) stands whatever a
            // later round does (`evidence::quickest_call`): timing it again only holds the GPU. On
            // an H200, a program that slept 25 s at its end held it 61 s instead of 20 s.
            if learner.call_failure.is_some() {
                return None;
            }
            let why =
                speed::call_doubts(weighed.ex, weighed.timer, &learner, &reference, &original);
            (!why.is_empty()).then_some((i, why))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::stages::Output;
    use crate::tools::runner::{Exit, Finished};
    use crate::tools::served::CallTimes;

    /// A call timing whose process ran `process_ms`, three calls of 1 ms, ended by `failure`.
    fn called(process_ms: u64, failure: Option<&str>) -> Output {
        Output::Called {
            command: String::new(),
            run: Ok(Finished::ended(
                Exit::Code(0),
                std::time::Duration::from_millis(process_ms),
            )),
            failure: failure.map(str::to_string),
            times: Some(CallTimes {
                calls_ns: vec![1e6; 3],
                cpu_ns: vec![None; 3],
                changed: vec![false; 3],
                ..CallTimes::default()
            }),
            timeline: None,
            driver: None,
            outputs: Vec::new(),
            kept: false,
        }
    }

    #[test]
    fn a_doubted_call_is_confirmed_and_a_failed_one_is_not_timed_again() {
        let (_dir, wb) = crate::exercise::workbook::test_workbook(&["03-race"]);
        let ex = wb.resolve("03-race").unwrap();
        let mut results = Results::default();
        // 0: 2.5 s outside its calls against the reference's 0.5 s (unaccounted time: doubted);
        // 1: the same, but ended at its margin (H200: slow-end-25); 2: as the reference.
        let stand_ins = [
            called(3000, None),
            called(3000, Some("the calls stopped")),
            called(500, None),
            called(500, None),
        ];
        for (i, o) in stand_ins.into_iter().enumerate() {
            results.outputs.insert(Stage::new(i, StageKind::Call), o);
        }
        let weighed = Weighed {
            ex,
            timer: Timer::Driver,
            reference: 3,
            original: None,
            batch: 0,
        };
        let doubted = doubted(&results, &weighed, &[0, 1, 2]);
        assert_eq!(doubted.len(), 1);
        assert_eq!(doubted[0].0, 0);
        assert!(
            doubted[0].1[0].starts_with("unaccounted-time: "),
            "{doubted:?}"
        );
    }
}
