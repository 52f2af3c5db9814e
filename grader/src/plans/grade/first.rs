//! A chunk's first phase: builds, the four tools, the public and the hidden cases in one scheduler
//! run (a crashed program's hidden cases again on their own), and the scores they earn.

use std::time::Instant;

use crate::engine::plan::{Stage, StageKind, Submission};
use crate::engine::scheduler::Results;
use crate::exercise::rubric::GradeStage;
use crate::exercise::workbook::{Exercise, Workbook};
use crate::judge::verdict::{Status, Step};
use crate::plans::session::{Phase, Plan, Session};

use super::score::{crashed, score_builds, score_cases, score_tools};
use super::worker::{Chunk, ExerciseCases, Worker};
use super::{PairResult, PairState};

/// Each pair that built: its tools and its public and hidden cases scored.
fn score_tools_and_cases(
    ex: &Exercise,
    results: &Results,
    out: &mut [PairResult],
    prepared: &ExerciseCases,
) {
    for (i, r) in out.iter_mut().enumerate() {
        if r.stage(GradeStage::Builds)
            .is_some_and(|s| s.status == Status::Passed)
        {
            score_tools(ex, results, i, r);
            score_cases(results, i, r, ex, &prepared.public, &prepared.secret);
        }
    }
}

impl Worker<'_> {
    /// The first phase's scores: each pair's builds, then (where `gpu_stages` run) its tools and
    /// cases, once the reference fix has passed the hidden cases (`unproven`: its run, where that
    /// is not yet proven for this exercise). Err: the chunk's end, every pair skipped without a
    /// GPU, or failed where the secret's cases do not fit the exercise.
    pub(super) fn score_first_phase(
        &self,
        chunk: &Chunk,
        results: &Results,
        prepared: &ExerciseCases,
        reference_sass: &Stage,
        unproven: Option<&Stage>,
        gpu_stages: bool,
    ) -> Result<Vec<PairResult>, Vec<PairResult>> {
        let ex = chunk.exercise;
        let mut out = self.pair_results(chunk);
        self.score_builds_and_flags(chunk, results, &mut out, reference_sass);
        if !gpu_stages {
            self.skip_without_gpu(&mut out);
            return Err(out);
        }
        if let Some(fairness) = unproven {
            if let Err(why) = self.prove_fair(ex, results, fairness, &prepared.secret.hidden) {
                return Err(self.failed_chunk(chunk, why.to_string()));
            }
        }
        score_tools_and_cases(ex, results, &mut out, prepared);
        Ok(out)
    }

    /// The first phase's stages run. A program that failed part-way lost the hidden cases after
    /// it: they run again on their own, as they would have in a process of their own (one that
    /// hung is not run again).
    pub(super) fn run_first_phase(
        &self,
        wb: &Workbook,
        subs: &[Submission],
        stages: &[Stage],
        students: usize,
        started: Instant,
    ) -> Results {
        let gpu_stages = self.ctx.gpu_stages();
        let again = |results: &Results| -> Vec<Stage> {
            (0..students)
                .filter(|&i| gpu_stages && crashed(results.get(i, StageKind::Correctness)))
                .map(|i| Stage::new(i, StageKind::Hidden))
                .collect()
        };
        let mut session = Session::new(&self.ctx, (wb, subs), started);
        session.run(&Plan {
            phases: vec![Phase::of(stages.to_vec()), Phase::after(&again)],
        });
        session.into_results()
    }

    /// Each pair's builds scored, and code that can tell it is watched (its text, or its kernels'
    /// clock reads beyond the reference's) flagged: that holds the tools' and the speed points for
    /// a person, whatever those stages find (withheld when the pair is totalled).
    fn score_builds_and_flags(
        &self,
        chunk: &Chunk,
        results: &Results,
        out: &mut [PairResult],
        reference_sass: &Stage,
    ) {
        for (i, r) in out.iter_mut().enumerate() {
            score_builds(&self.ctx, results, i, r);
            if let Some(f) = crate::judge::tool_aware::flag_built(
                &self.ctx,
                chunk.exercise,
                &chunk.pairs[i].text,
                results,
                i,
                reference_sass,
            ) {
                r.steps.push(f.step());
                r.flags.push(f);
            }
        }
    }

    /// Without a GPU: every pair that built is skipped, and says why.
    fn skip_without_gpu(&self, out: &mut [PairResult]) {
        let reason = self.ctx.gpu_blocked().unwrap_or_default();
        for r in out {
            if r.stage(GradeStage::Builds)
                .is_some_and(|s| s.status == Status::Passed)
            {
                r.state = PairState::Skipped {
                    reason: reason.clone(),
                };
                r.steps.push(Step::gpu_skipped(reason.clone()));
            }
            r.total();
        }
    }
}
