//! The one way a plan runs anything. A plan (`check`, `verify`, `sanitize`, `grade`) is data: its
//! phases, each a list of stages (or stages worked out from what ran before) and, for a timed
//! phase, what its whole calls are weighed against, with the library baselines it times. A
//! `Session` holds one execution's outputs and clock, and runs plan after plan. Whether a plan goes
//! on after a phase is a verdict (a learner's failed build or wrong outputs are not the engine's
//! failures), so the plans judge between the session's runs; where the GPU stages cannot run, the
//! scheduler says why in each stage's place (`Blocked::NoGpu`). The session owns what every plan
//! would otherwise write again: the timed phase with its kept measurements and its confirming
//! rounds, and the library baselines, timed after the phase's stages while the GPU is still the
//! plan's. The engine's events (`Context::events`) tell each phase and stage as it runs.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::engine::context::Context;
use crate::engine::plan::{self, Stage, Submission};
use crate::engine::scheduler::{self, PhaseTimes, Results};
use crate::exercise::workbook::{Exercise, Workbook};
use crate::judge::perf;
use crate::judge::verdict::Untimed;
use crate::plans::timed::{doubted, TimedPhase, Weighed};
use crate::tools::ncu::Measured;

/// A plan's phases, in their order.
pub struct Plan<'p> {
    pub phases: Vec<Phase<'p>>,
}

/// One phase of a plan.
pub struct Phase<'p> {
    pub stages: Stages<'p>,
    /// A timed phase: the reference fix's fresh call that kept measurements are held to, and the
    /// calls weighed (and confirmed where doubted) against it.
    pub timed: Option<TimedPhase<'p>>,
    /// The exercises whose library baselines (`perf::time_baseline`) are timed after the stages.
    pub baselines: Vec<&'p Exercise>,
}

/// The stages of a phase: listed when the plan is made, or worked out from the outputs of the
/// phases before it (a crashed run's hidden cases, run again).
pub enum Stages<'p> {
    Listed(Vec<Stage>),
    After(&'p dyn Fn(&Results) -> Vec<Stage>),
}

/// What one phase left besides its outputs in the session's `Results`.
#[derive(Debug, Default)]
pub struct PhaseEnd {
    pub times: PhaseTimes,
    /// The report's line where kept measurements served (they stood, or were taken again).
    pub kept: Option<String>,
    /// Seconds the GPU was held alone: the whole calls and their confirming rounds.
    pub alone_s: f64,
    /// The subjects whose first whole calls were doubted, and why (`speed::call_doubts`): what the
    /// confirming rounds were for.
    pub doubted: Vec<(usize, Vec<String>)>,
    /// Each of `Phase::baselines` by exercise id: its measurement (None: it has no baseline).
    pub baselines: BTreeMap<String, Result<Option<Measured>, Untimed>>,
}

impl PhaseEnd {
    /// The library baseline of a phase that times one exercise's (`Phase::with_baselines`), taken
    /// out of `baselines`; Ok(None) where the phase timed none.
    pub fn take_baseline(&mut self) -> Result<Option<Measured>, Untimed> {
        std::mem::take(&mut self.baselines)
            .into_values()
            .next()
            .unwrap_or(Ok(None))
    }
}

impl<'p> Phase<'p> {
    /// `stages`, untimed.
    pub fn of(stages: Vec<Stage>) -> Phase<'p> {
        Phase {
            stages: Stages::Listed(stages),
            timed: None,
            baselines: Vec::new(),
        }
    }

    /// The stages `after` works out from what the phases before this one left.
    pub fn after(after: &'p dyn Fn(&Results) -> Vec<Stage>) -> Phase<'p> {
        Phase {
            stages: Stages::After(after),
            ..Phase::of(Vec::new())
        }
    }

    pub fn timed(self, timed: TimedPhase<'p>) -> Phase<'p> {
        Phase {
            timed: Some(timed),
            ..self
        }
    }

    pub fn with_baselines(self, baselines: Vec<&'p Exercise>) -> Phase<'p> {
        Phase { baselines, ..self }
    }
}

/// One execution over one list of submissions: its outputs and its clock, phase after phase.
pub struct Session<'a, 's> {
    ctx: &'a Context,
    wb: &'a Workbook,
    subs: &'a [Submission<'s>],
    started: Instant,
    pub results: Results,
}

impl<'a, 's> Session<'a, 's> {
    /// A session with nothing run yet; its times count from `started`.
    pub fn new(
        ctx: &'a Context,
        (wb, subs): (&'a Workbook, &'a [Submission<'s>]),
        started: Instant,
    ) -> Session<'a, 's> {
        Session::resume(ctx, (wb, subs), started, Results::default())
    }

    /// A session that goes on from `results` (a chunk finished on another thread).
    pub fn resume(
        ctx: &'a Context,
        (wb, subs): (&'a Workbook, &'a [Submission<'s>]),
        started: Instant,
        results: Results,
    ) -> Session<'a, 's> {
        Session {
            ctx,
            wb,
            subs,
            started,
            results,
        }
    }

    /// The workbook and the submissions this session runs over.
    pub fn subjects(&self) -> (&'a Workbook, &'a [Submission<'s>]) {
        (self.wb, self.subs)
    }

    pub fn into_results(self) -> Results {
        self.results
    }

    /// Run `plan`'s phases in their order: what each left.
    pub fn run(&mut self, plan: &Plan) -> Vec<PhaseEnd> {
        plan.phases.iter().map(|p| self.run_phase(p)).collect()
    }

    /// Run one phase: its stages, then for a timed phase the kept measurements held to
    /// its anchor and the doubted calls confirmed, then its library baselines.
    pub fn run_phase(&mut self, phase: &Phase) -> PhaseEnd {
        let worked_out;
        let stages: &[Stage] = match &phase.stages {
            Stages::Listed(stages) => stages,
            Stages::After(after) => {
                worked_out = after(&self.results);
                &worked_out
            }
        };
        let mut end = PhaseEnd::default();
        if !stages.is_empty() {
            end.times = self.execute(stages);
            end.alone_s = end.times.exclusive.unwrap_or(0.0);
        }
        if let Some(timed) = &phase.timed {
            end.kept = scheduler::keep_or_measure_again(
                self.ctx,
                self.wb,
                self.subs,
                stages,
                &timed.anchor,
                &mut self.results,
                self.started,
            );
            end.doubted = doubted(&self.results, &timed.weighed, timed.candidates);
            end.alone_s += self.confirm_doubted_calls(&timed.weighed, &end.doubted);
        }
        // The library's ncu run has the GPU alone too: no other lane's run starts beside it.
        let share = crate::engine::gpu_share::GpuShare::of(self.ctx.config.gpu.as_deref());
        let _alone = (!phase.baselines.is_empty()).then(|| share.alone());
        end.baselines = phase
            .baselines
            .iter()
            .map(|ex| {
                let measured = perf::time_baseline(self.ctx, self.wb, ex);
                (ex.id().to_string(), measured)
            })
            .collect();
        end
    }

    fn execute(&mut self, stages: &[Stage]) -> PhaseTimes {
        scheduler::execute(
            self.ctx,
            self.wb,
            self.subs,
            stages,
            &mut self.results,
            self.started,
        )
    }

    /// Time again, in confirming rounds beside the reference fix, each `doubted` subject. Where the
    /// call is the clock, the original's whole call is the speedup's measure: timed again in each
    /// round too. Returns the seconds the confirming calls took alone on the GPU.
    fn confirm_doubted_calls(
        &mut self,
        weighed: &Weighed,
        doubted: &[(usize, Vec<String>)],
    ) -> f64 {
        if doubted.is_empty() {
            return 0.0;
        }
        let doubted: Vec<usize> = doubted
            .iter()
            .map(|(subject, _)| *subject)
            .chain(weighed.original.filter(|_| weighed.timer.by_call()))
            .collect();
        let confirming = plan::confirming_calls(weighed.reference, &doubted, weighed.batch);
        self.execute(&confirming).exclusive.unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::plan::StageKind;
    use crate::tools::nvcc::Flavor;

    #[test]
    fn stages_worked_out_from_what_ran_before_run_after_it() {
        let (_dir, wb) = crate::exercise::workbook::test_workbook(&["03-race"]);
        let ctx = crate::engine::context::Context::builder(
            &wb,
            crate::engine::config::Config {
                install_toolkit: false,
                ..Default::default()
            },
        )
        .no_compiler()
        .gpu(crate::tools::gpu::GpuStatus::NoDriver)
        .build(|_| {})
        .unwrap();
        let ex = wb.resolve("03-race").unwrap();
        let cases = crate::exercise::cases::Cases::default();
        let path = wb.learner_path(ex);
        let subs = [Submission::new(
            &wb,
            "test",
            ex,
            "learner",
            path,
            ex.original.to_string(),
            &cases,
        )];
        let mut session = Session::new(&ctx, (&wb, &subs), Instant::now());
        // Each build's hidden cases, worked out once the builds have ended.
        let hidden = |r: &Results| -> Vec<Stage> {
            r.outputs
                .keys()
                .filter(|s| s.kind == StageKind::Build(Flavor::Timing))
                .map(|s| Stage::new(s.subject, StageKind::Hidden))
                .collect()
        };
        let ends = session.run(&Plan {
            phases: vec![
                Phase::of(vec![Stage::new(0, StageKind::Build(Flavor::Timing))]),
                Phase::after(&hidden),
            ],
        });
        assert_eq!(ends.len(), 2);
        let ran: Vec<StageKind> = session.results.outputs.keys().map(|s| s.kind).collect();
        assert_eq!(ran, [StageKind::Build(Flavor::Timing), StageKind::Hidden]);
        // No compiler and no GPU here: each stage says why it did not run, and nothing is timed.
        assert!(ends.iter().all(|e| e.kept.is_none() && e.alone_s == 0.0));
        assert!(ends[1].times.runs_done_at.is_none());
    }

    #[test]
    fn a_phase_s_one_baseline_is_taken_out_and_none_is_ok_none() {
        let mut end = PhaseEnd::default();
        assert!(matches!(end.take_baseline(), Ok(None)));
        end.baselines
            .insert("57-reduction".into(), Err(Untimed::NotTimed));
        assert!(matches!(end.take_baseline(), Err(Untimed::NotTimed)));
        assert!(end.baselines.is_empty(), "taken out, not copied");
    }
}
