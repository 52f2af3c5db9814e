//! What the engine tells while any plan runs: each phase of an execution as it starts, and each
//! stage as it ends, typed, so that every reporter reads the same facts (`--format events` prints
//! them as `phase_started` and `stage_done`). Every plan runs its stages through one session
//! (`plans::session`), whose phases `scheduler::execute` runs, so `check`, `verify`, `sanitize` and
//! `grade` tell them alike.

use std::sync::Arc;

use serde::Serialize;

/// Where the engine's events go (`Context::events`).
pub type EventSink = Arc<dyn Fn(&EngineEvent) + Send + Sync>;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EngineEvent {
    /// A phase of one execution began, with how many stages it holds.
    PhaseStarted {
        phase: Phase,
        stages: usize,
        /// Seconds since the plan began.
        at_s: f64,
    },
    /// One stage ended.
    StageDone {
        /// The submission's name (a student's, or the exercise's for `check`).
        submission: String,
        /// Which version: "learner", "reference", "original", or a student's.
        variant: String,
        /// The stage's id: "build-debug", "sanitize:racecheck", "call", ...
        stage: String,
        /// Which run of it (0: the first; confirming runs after).
        run: u32,
        from_s: f64,
        secs: f64,
        outcome: StageOutcome,
        /// Why it did not run, or what failed, where one of those.
        #[serde(skip_serializing_if = "Option::is_none")]
        why: Option<String>,
    },
}

/// The phases of an execution (`scheduler::execute`), in their order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The builds on the CPU cores, and beside them the GPU stages that share the GPU (the
    /// sanitizers and the cases), each as soon as its build is there.
    Shared,
    /// The profiler's runs (ncu), after every shared stage.
    Profiler,
    /// The whole calls, each alone on the GPU.
    Alone,
}

/// How a stage ended, as the engine sees it (whether it passes is the judge's to say).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StageOutcome {
    /// It ran to its end (the program may still have failed its cases: the judge says).
    Ran,
    /// A build or a tool failed, or the program could not be started.
    Failed,
    /// It could not run here (no GPU, its build failed, not for this plan).
    NotRun,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_s_end_is_one_flat_object_named_by_its_event() {
        let e = EngineEvent::StageDone {
            submission: "03-race".into(),
            variant: "learner".into(),
            stage: "sanitize:racecheck".into(),
            run: 0,
            from_s: 1.5,
            secs: 2.25,
            outcome: StageOutcome::NotRun,
            why: Some("no GPU".into()),
        };
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({"event": "stage_done", "submission": "03-race", "variant": "learner",
                "stage": "sanitize:racecheck", "run": 0, "from_s": 1.5, "secs": 2.25,
                "outcome": "not_run", "why": "no GPU"})
        );
        let p = EngineEvent::PhaseStarted {
            phase: Phase::Alone,
            stages: 3,
            at_s: 0.5,
        };
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            serde_json::json!({"event": "phase_started", "phase": "alone", "stages": 3, "at_s": 0.5})
        );
    }
}
