//! A chunk's stages, as data: the first phase's (builds, tools, cases), which pairs are timed, and
//! the timed phase's. The worker runs them (`worker`); the scores read what they left (`score`).

use crate::engine::plan::{self, Role, Stage, StageKind, Timer};
use crate::exercise::rubric::GradeStage;
use crate::exercise::workbook::Exercise;
use crate::judge::verdict::Status;
use crate::tools::nvcc::Flavor;

use super::PairResult;

/// The first phase's stages: every student's builds and device code (and the reference's, for
/// clock reads; no GPU needed); on a GPU the exercise's tools and the public and hidden cases in
/// one run, the reference's hidden run where the instructor's cases are not yet proven fair, and
/// the builds the original's timed stages will run: built on the CPU beside the tools, not while
/// the timed phase holds the GPU alone (2.0-2.3 s a performance chunk on an H200,
/// book/gpu-runs/2026-12-01-ncu-50/).
pub(super) fn first_stages(
    ex: &Exercise,
    students: usize,
    (reference_sass, fairness): (&Stage, Option<&Stage>),
    original: Option<(usize, Timer)>,
    gpu_stages: bool,
) -> Vec<Stage> {
    let mut stages = vec![reference_sass.clone()];
    for i in 0..students {
        stages.push(Stage::new(i, StageKind::Build(Flavor::Sanitize)));
        stages.push(Stage::new(i, StageKind::Build(Flavor::Timing)));
        stages.push(Stage::new(i, StageKind::Sass));
        if gpu_stages {
            stages.extend(
                ex.manifest
                    .tools()
                    .into_iter()
                    .map(|t| Stage::new(i, StageKind::Sanitize(t))),
            );
            stages.push(Stage::new(i, StageKind::Correctness));
        }
    }
    stages.extend(fairness.cloned());
    if let Some((o, timer)) = original.filter(|_| gpu_stages) {
        let mut builds: Vec<Stage> = plan::timed_kinds(ex, timer, Role::Original)
            .into_iter()
            .filter_map(|k| k.needs())
            .map(|flavor| Stage::new(o, StageKind::Build(flavor)))
            .collect();
        builds.dedup();
        stages.extend(builds);
    }
    stages
}

/// The pairs to time: those whose outputs are right (and, on the bug track, whose exercise's tool
/// is clean: a fast file with the bug still in it earns no speed points). Every other pair that
/// built gets its speed step skipped.
pub(super) fn timed_pairs(out: &mut [PairResult]) -> Vec<usize> {
    let fixed = |r: &PairResult| {
        [
            GradeStage::Public,
            GradeStage::Hidden,
            GradeStage::NamedTool,
        ]
        .iter()
        .all(|s| r.stage(*s).is_none_or(|x| x.status == Status::Passed))
    };
    let built = |r: &PairResult| {
        r.stage(GradeStage::Builds)
            .is_some_and(|s| s.status == Status::Passed)
    };
    let correct: Vec<usize> = (0..out.len()).filter(|&i| fixed(&out[i])).collect();
    for r in out.iter_mut().filter(|r| !fixed(r) && built(r)) {
        r.set(
            GradeStage::Speed,
            0.0,
            Status::Skipped,
            "not timed: the outputs must be right (and the exercise's tool clean) first",
        );
    }
    correct
}

/// The timed stages of a chunk: each correct student's, the reference fix's and (on the
/// performance track) the original's, as `plan::timed_kinds` says. The reference's and the
/// original's are timed again in each chunk, beside its students (their profiles kept).
pub(super) fn timing_stages(
    ex: &Exercise,
    timer: Timer,
    correct: &[usize],
    reference: usize,
    original: Option<usize>,
    chunk: u32,
) -> Vec<Stage> {
    let mut timing: Vec<Stage> = correct
        .iter()
        .flat_map(|&i| {
            plan::timed_kinds(ex, timer, Role::Learner)
                .into_iter()
                .map(move |k| Stage::new(i, k))
        })
        .collect();
    timing.extend(
        plan::timed_kinds(ex, timer, Role::Reference)
            .into_iter()
            .map(|k| Stage::again(reference, k, chunk)),
    );
    if let Some(o) = original {
        timing.extend(
            plan::timed_kinds(ex, timer, Role::Original)
                .into_iter()
                .map(|k| Stage::again(o, k, chunk)),
        );
    }
    timing
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exercise::workbook::test_workbook;

    /// The original's timed build is in the first phase wherever it will be timed (a performance
    /// exercise on a GPU), so that the timed phase, which has the GPU alone, starts with nothing
    /// to build.
    #[test]
    fn the_original_is_built_beside_the_tools_not_in_the_timed_phase() {
        let (_dir, wb) = test_workbook(&["51-coalesce"]);
        let ex = wb.resolve("51-coalesce").unwrap();
        let (students, reference, original) = (2, 2, 3);
        let sass = Stage::new(reference, StageKind::Sass);
        let first = |gpu: bool, timer: Timer| {
            first_stages(ex, students, (&sass, None), Some((original, timer)), gpu)
        };
        let of_original = |stages: &[Stage]| -> Vec<StageKind> {
            stages
                .iter()
                .filter(|s| s.subject == original)
                .map(|s| s.kind)
                .collect()
        };
        let timed = timing_stages(ex, Timer::Ncu, &[0, 1], reference, Some(original), 0);
        let needed: Vec<StageKind> = timed
            .iter()
            .filter(|s| s.subject == original)
            .filter_map(|s| s.kind.needs())
            .map(StageKind::Build)
            .collect();
        assert_eq!(needed, vec![StageKind::Build(Flavor::Timing)]);
        assert_eq!(of_original(&first(true, Timer::Ncu)), needed);
        assert_eq!(
            of_original(&first(false, Timer::Ncu)),
            vec![],
            "no GPU: nothing is timed, nothing of the original's is built"
        );
        let bug = first_stages(ex, students, (&sass, None), None, true);
        assert!(
            bug.iter().all(|s| s.subject < original),
            "no original (the bug track): no build of one"
        );
    }
}
