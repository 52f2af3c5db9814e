//! A chunk's timed phase and what follows it: ncu and the whole calls alone on the GPU, the
//! doubted calls confirmed, then (beside the next chunk's tools) the fresh inputs and every timed
//! pair judged against the reference fix.

use std::time::Instant;

use crate::engine::evidence;
use crate::engine::plan::{Stage, StageKind, Timer};
use crate::engine::scheduler::{self, Results};
use crate::engine::stages::Output;
use crate::exercise::workbook::Workbook;
use crate::judge::verdict;

use crate::plans::session::{Phase, Session};
use crate::plans::timed::{TimedPhase, Weighed};

use super::score::PairJudge;
use super::stages::timing_stages;
use super::worker::{run_stats, Chunk, ChunkPhases, TimedChunk, TimedWork, Worker};
use super::PairResult;

impl Worker<'_> {
    /// The chunk's timed stages: ncu first, then the whole calls alone on the GPU, the kept
    /// measurements checked, the doubted calls confirmed, and the library baseline (the
    /// performance track). Returns the baseline's measurement.
    pub(super) fn time_chunk(
        &self,
        work: &TimedWork,
        results: &mut Results,
        phases: &mut ChunkPhases,
    ) -> Option<crate::tools::ncu::Measured> {
        let TimedWork {
            timer,
            wb,
            subs,
            correct,
            reference,
            original,
            chunk,
            started,
        } = *work;
        // ncu first; the whole calls alone on the GPU after the profiler. The
        // reference's and the original's are timed again in each chunk, beside its students.
        let timing = timing_stages(
            chunk.exercise,
            timer,
            correct,
            reference,
            original,
            chunk.index,
        );
        let phase = Instant::now();
        // The reference's and the original's profiles are kept from chunk to chunk (and grade to
        // grade) while the GPU times the reference fix's fresh whole call the same; the doubted
        // calls are confirmed while the GPU is still this chunk's alone.
        let timed = TimedPhase {
            anchor: Stage::again(reference, StageKind::Call, chunk.index),
            weighed: Weighed {
                ex: chunk.exercise,
                timer,
                reference,
                original,
                batch: chunk.index,
            },
            candidates: correct,
        };
        // The library baseline (the performance track: an original is timed) after them.
        let baselines = original.map(|_| chunk.exercise).into_iter().collect();
        let mut session = Session::resume(&self.ctx, (wb, subs), started, std::mem::take(results));
        let mut end = session.run_phase(&Phase::of(timing).timed(timed).with_baselines(baselines));
        *results = session.into_results();
        phases.calls = end.alone_s;
        let baseline = end.take_baseline().ok().flatten();
        phases.doubted = end
            .doubted
            .into_iter()
            .map(|(i, why)| (subs[i].variant.clone(), why))
            .collect();
        phases.timing = phase.elapsed().as_secs_f64();
        baseline
    }

    /// The rest of a timed chunk: fresh inputs, then every timed pair judged.
    pub fn finish_timed(
        &self,
        wb: &Workbook,
        chunk: &Chunk,
        timed: TimedChunk,
    ) -> (Vec<PairResult>, ChunkPhases) {
        let TimedChunk {
            timer,
            prepared,
            results,
            mut out,
            correct,
            peak,
            baseline,
            started,
            mut phases,
        } = timed;
        let ex = chunk.exercise;
        let secret = &prepared.secret;
        let (subs, reference, original) = self.subjects(wb, chunk, &prepared);
        // 3. Fresh inputs, after the timed runs.
        let phase = Instant::now();
        let fresh: Vec<Stage> = correct
            .iter()
            .map(|&i| Stage::new(i, StageKind::Fresh))
            .collect();
        let mut session = Session::resume(&self.ctx, (wb, &subs), started, results);
        session.run_phase(&Phase::of(fresh));
        let results = session.into_results();
        phases.fresh = phase.elapsed().as_secs_f64();

        let reference_run =
            |k: StageKind| results.get_run(&Stage::again(reference, k, chunk.index));
        let mut reference_evidence = evidence::evidence(
            reference_run(StageKind::Timing),
            reference_run(StageKind::Call),
        );
        if let Some(why) = untimed_reference(timer, &reference_evidence, reference_run) {
            return (self.failed_chunk(chunk, why), phases);
        }
        let reference_outputs = evidence::ReadOnce::default();
        let original_run =
            |k: StageKind| original.and_then(|o| results.get_run(&Stage::again(o, k, chunk.index)));
        reference_evidence.read_once = Some(&reference_outputs);
        let judge = PairJudge {
            ex,
            timer,
            results: &results,
            batch: chunk.index,
            reference,
            original,
            peak: peak.as_ref(),
            baseline: baseline.as_ref(),
            reference_evidence,
            original_evidence: evidence::evidence(
                original_run(StageKind::Timing),
                original_run(StageKind::Call),
            ),
            fresh: &secret.fresh,
        };
        // Each pair's judging reads and compares its timed outputs (two bench outputs of up to
        // 256 MiB): one pair per core.
        let phase = Instant::now();
        let judged = scheduler::parallel(&correct, self.ctx.config.cpu_jobs, |&i| {
            let mut r = out[i].clone();
            judge.judge(i, &mut r);
            r
        });
        for (&i, r) in correct.iter().zip(judged) {
            out[i] = r;
        }
        phases.judging = phase.elapsed().as_secs_f64();
        phases.runs = run_stats(&results);
        self.finish(out, started, phases)
    }
}

/// Why the reference fix's timed runs in a chunk give no time to judge against, where they do not:
/// ncu could not time it, or (where the driver times the kernels) its plain calls failed or ran no
/// kernel. No pair of the chunk can then be judged.
fn untimed_reference<'r>(
    timer: Timer,
    evidence: &evidence::Timed,
    run: impl Fn(StageKind) -> Option<&'r Output>,
) -> Option<String> {
    // ncu profiles the reference wherever it runs (where the call is the clock too: the counters).
    let timed = match timer {
        Timer::Driver => evidence.plain_kernel_ns(),
        Timer::Ncu | Timer::Call => evidence.measured.and_then(|m| m.nanoseconds),
    };
    if timed.is_some() {
        return None;
    }
    Some(match timer {
        Timer::Driver => format!(
            "the driver recorded no kernel of the reference fix's plain calls ({})",
            evidence
                .call_failure
                .unwrap_or("no record of the GPU's work")
        ),
        _ => format!(
            "ncu could not time the reference fix ({})",
            verdict::measured_time(run(StageKind::Timing))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        ),
    })
}
