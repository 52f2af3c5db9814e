//! Which instrument measures a version's judged time: ncu, the driver's records of the plain calls,
//! or the grader's clock of the whole call. One decision for every plan (`Timer::of`).

use crate::exercise::manifest::Clock;
use crate::exercise::workbook::Exercise;

/// What measures a version's judged time, decided once for every plan (`Timer::of`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    /// ncu's time of the exercise's kernels, at base clocks with cold caches: the kernel clock in
    /// `check` and `verify` (the times the lessons and the committed records quote), and the
    /// performance track everywhere (its metrics come from the same pass).
    Ncu,
    /// The driver's record (CUPTI's) of every kernel of the plain judged calls: `grade`'s bug
    /// track, where the speed step asks only "within the target of the reference fix". One timed
    /// process a version instead of two, and no turn at the profiler's lock: on an H200 the ncu
    /// processes were most of a bug chunk's timing phase (book/gpu-runs/2026-11-29-driver-47/).
    Driver,
    /// The grader's clock of the whole call: where the exercise's clock is the call.
    Call,
}

impl Timer {
    /// The timer of `ex` in a plan: the whole call where that is the exercise's clock; the
    /// driver's records where the plan times the bug track's kernels in the plain calls
    /// (`Config::plain_kernel_timing`) and the toolkit has CUPTI; else ncu.
    pub fn of(ctx: &crate::engine::context::Context, ex: &Exercise) -> Timer {
        let bug_track = ex.manifest.manifest.perf.is_none();
        if bug_track && ctx.config.plain_kernel_timing && ctx.nvcc.cupti.is_some() {
            Timer::Driver
        } else {
            Timer::profiled(ex)
        }
    }

    /// The timer where ncu profiles every version whose clock is the kernels (`verify`, whose
    /// record holds ncu's times; `Timer::of` without plain kernel timing).
    pub fn profiled(ex: &Exercise) -> Timer {
        if ex.manifest.manifest.clock() == Clock::Call {
            Timer::Call
        } else {
            Timer::Ncu
        }
    }

    /// Whether the whole call is the judged time.
    pub fn by_call(self) -> bool {
        self == Timer::Call
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::engine::plan::{timed_kinds, Role, StageKind};

    /// grade's bug track is timed in the plain calls where the toolkit has CUPTI; its performance
    /// track, the call clock and every other plan keep theirs.
    #[test]
    fn the_driver_times_only_grade_s_bug_track_and_only_with_cupti() {
        use crate::engine::context::Context;
        use crate::tools::gpu::GpuStatus;
        use crate::tools::nvcc::Harness;
        use crate::tools::toolchain::{Cupti, Nvcc};
        let (_dir, wb) =
            crate::exercise::workbook::test_workbook(&["03-race", "57-reduction", "62-launches"]);
        let context = |plain: bool, cupti: bool| {
            let config = crate::engine::config::Config {
                install_toolkit: false,
                plain_kernel_timing: plain,
                ..Default::default()
            };
            let missing = PathBuf::from("/nonexistent");
            let nvcc = Nvcc {
                path: missing.join("nvcc"),
                extra_flags: Vec::new(),
                cupti: cupti.then(|| Cupti {
                    include: missing.clone(),
                    library: missing.join("libcupti.so"),
                }),
            };
            let harness = Harness {
                include_dir: missing.clone(),
                object: missing.clone(),
            };
            Context::builder(&wb, config)
                .compiler(nvcc, harness)
                .gpu(GpuStatus::NoDriver)
                .build(|_| {})
                .unwrap()
        };
        let [race, reduction, launches] =
            ["03-race", "57-reduction", "62-launches"].map(|id| wb.resolve(id).unwrap());
        let grade = context(true, true);
        assert_eq!(Timer::of(&grade, race), Timer::Driver);
        assert_eq!(Timer::of(&grade, reduction), Timer::Ncu);
        assert_eq!(Timer::of(&grade, launches), Timer::Call);
        assert_eq!(
            Timer::of(&context(true, false), race),
            Timer::Ncu,
            "no CUPTI"
        );
        assert_eq!(
            Timer::of(&context(false, true), race),
            Timer::Ncu,
            "check, verify"
        );
        for role in [Role::Learner, Role::Reference, Role::Original] {
            assert_eq!(timed_kinds(race, Timer::Driver, role), [StageKind::Call]);
        }
        assert_eq!(
            timed_kinds(race, Timer::Ncu, Role::Learner),
            [StageKind::Timing, StageKind::Call]
        );
    }
}
