//! A GPU stage run again alone, once the stages it shared the GPU with have ended (`scheduler`):
//! one that failed on a resource another program may have held, with its full limit; a tool that
//! stalled beside other runs, within a limit its peers set.

use crate::engine::pace;
use crate::engine::plan::{Stage, StageKind};
use crate::engine::stages::Output;

/// What a run that failed for want of a GPU resource says: out of device memory, the device busy
/// or unavailable. Another program on the same GPU can cause these; a kernel's own bad launch
/// configuration (too many threads, too much shared memory) is not one of them.
const RESOURCE_FAILURES: &[&str] = &[
    "out of memory",
    "cudaErrorMemoryAllocation",
    "CUDA_ERROR_OUT_OF_MEMORY",
    "cudaErrorDevicesUnavailable",
    "busy or unavailable",
    "cudaErrorStartupFailure",
    // compute-sanitizer's words when it cannot set itself up on the GPU: seen on an H100 while
    // another program held all of its memory (a reference fix then "failed" racecheck).
    "Error: Device not supported",
];

/// Whether a GPU stage's run failed on a shared resource (and so may not be the program's fault).
pub fn failed_on_resource(o: &Output) -> bool {
    // The runs that share the GPU with other programs: the tools, the plain runs and the timings.
    let Some(finished) = o.finished().filter(|_| {
        matches!(
            o,
            Output::Ran { .. } | Output::Sanitized { .. } | Output::Timed { .. }
        )
    }) else {
        return false;
    };
    // Killed for holding more GPU memory than a shared run may: its own doing (`gpu_memory`).
    if finished.gpu_memory_over.is_some() {
        return false;
    }
    if finished.success() || finished.exit == crate::tools::runner::Exit::TimedOut {
        return false;
    }
    let text = finished.output();
    RESOURCE_FAILURES.iter().any(|p| text.contains(p))
}

/// Whether, and how, a GPU stage runs again alone once the others have ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Again {
    No,
    /// It failed on a resource another program may have held: again, with its full time limit.
    Full,
    /// A tool that stalled beside other runs: again, held to a limit its peers set (`run_again`).
    Stalled(std::time::Duration),
}

/// Where no other program ran the tool (`check` runs the tools on the learner's file alone), a
/// stalled run alone is held to this many times the program's own plain run: the tools ran
/// programs 2-20x slower than their plain runs on the H100 (initcheck of a 0.3 s run: up to 5.6 s).
/// Where others did, to the pace their runs set (`pace::peers_limit`).
const STALL_PLAIN_FACTOR: u32 = 50;

/// How `stage` runs again, if it does: a failure on a shared resource with its full limit; a tool
/// that stalled (see `stalled`) within a limit derived from its peers, so that a program that
/// stalls only under a tool (it can tell) costs one short wait alone, not a second full one.
pub(super) fn run_again(
    stage: &Stage,
    output: &Output,
    stages: &[Stage],
    outputs: &[Output],
    limit: std::time::Duration,
) -> Again {
    if failed_on_resource(output) {
        return Again::Full;
    }
    if !stalled(stage, output, stages, outputs) {
        return Again::No;
    }
    let walls = |same: &dyn Fn(&Stage) -> bool| -> Vec<std::time::Duration> {
        stages
            .iter()
            .zip(outputs)
            .filter(|(s, _)| same(s))
            .filter_map(|(_, o)| pace::wall_of_its_own(o))
            .collect()
    };
    let peers = walls(&|s| s.kind == stage.kind && s.subject != stage.subject);
    let own_plain = || {
        let plain = walls(&|s| {
            s.subject == stage.subject
                && matches!(s.kind, StageKind::Correctness | StageKind::Hidden)
        });
        Some((plain.into_iter().max()? * STALL_PLAIN_FACTOR).max(pace::FLOOR))
    };
    Again::Stalled(
        pace::peers_limit(&peers, limit)
            .or_else(own_plain)
            .map_or(limit, |w| w.min(limit)),
    )
}

/// Whether a tool run ran out of time beside other runs while the same program, run plainly in
/// the same batch, finished in time: the tool stalled, not the program. On an H100, one initcheck
/// of 60 (05-memset's original, 12 processes sharing the GPU) ran into grade's 90 s limit where
/// the others took 1-12 s; a grade must not hang on that.
fn stalled(stage: &Stage, output: &Output, stages: &[Stage], outputs: &[Output]) -> bool {
    matches!(stage.kind, StageKind::Sanitize(_))
        && pace::timed_out(output)
        && stages.iter().zip(outputs).any(|(s, o)| {
            s.subject == stage.subject
                && matches!(s.kind, StageKind::Correctness | StageKind::Hidden)
                && matches!(o, Output::Ran { run: Ok(_), .. })
                && !pace::timed_out(o)
        })
}

/// Run again, one at a time, each of `stages` that `again` marks; how many ran again. Even one
/// stage alone in its run may have shared the GPU with another run (grade ends one chunk beside the
/// next chunk's tools). A program whose stalled tool stalls again alone has shown the stall is its
/// own: its other stalled tools keep their time-out rather than each waiting again.
pub(super) fn rerun_alone(
    stages: &[Stage],
    outputs: &mut [Output],
    again: &[Again],
    run: &dyn Fn(&Stage, Option<std::time::Duration>) -> Output,
) -> usize {
    let mut count = 0;
    let mut stalls_alone = std::collections::BTreeSet::new();
    for ((s, o), a) in stages.iter().zip(outputs.iter_mut()).zip(again) {
        let limit = match *a {
            Again::No => continue,
            Again::Stalled(_) if stalls_alone.contains(&s.subject) => continue,
            Again::Full => None,
            Again::Stalled(limit) => Some(limit),
        };
        *o = run(s, limit);
        count += 1;
        if matches!(a, Again::Stalled(_)) && pace::timed_out(o) {
            stalls_alone.insert(s.subject);
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(code: i32, text: &str) -> Output {
        use crate::tools::runner::{Captured, Exit, Finished};
        let stdout = Captured {
            bytes: text.as_bytes().to_vec(),
            dropped: 0,
        };
        let finished = Finished {
            stdout,
            ..Finished::ended(Exit::Code(code), Default::default())
        };
        Output::Ran {
            command: String::new(),
            run: Ok(finished),
            outputs: Vec::new(),
            bounds: crate::engine::stages::Bounds::plain(Default::default()),
        }
    }

    #[test]
    fn failures_for_want_of_the_gpu_are_told_from_the_programs_own() {
        // racecheck of the 03-race reference fix on an H100 while the `hog` student held the memory.
        let hogged = "========= COMPUTE-SANITIZER\n========= Error: Device not supported. Please refer to the \"Supported Devices\" section of the sanitizer documentation\n========= Target application returned an error\n";
        assert!(failed_on_resource(&ran(86, hogged)));
        assert!(failed_on_resource(&ran(
            3,
            "CUDA error at reduce.cu:51: out of memory (cudaMalloc(&d_in, n * sizeof(float)))"
        )));
        assert!(
            !failed_on_resource(&ran(
                3,
                "CUDA error at softmax.cu:60: invalid configuration argument"
            )),
            "a launch of its own making"
        );
        assert!(
            !failed_on_resource(&ran(0, "out of memory")),
            "a run that succeeded is not run again"
        );
    }

    #[test]
    fn a_run_killed_over_its_gpu_memory_share_is_not_run_again() {
        use crate::tools::runner::Exit;
        // The `hog` fixture's racecheck on an H200: out of memory in its own allocations, and
        // killed over its share. Alone it would hold the GPU from the whole class.
        let mut killed = ran(86, "CUDA_ERROR_OUT_OF_MEMORY");
        if let Output::Ran { run: Ok(f), .. } = &mut killed {
            f.exit = Exit::Signal(libc::SIGKILL);
            f.gpu_memory_over = Some(crate::tools::gpu_memory::GpuMemoryOver {
                held: 10 << 30,
                share: 8 << 30,
                total: 140 << 30,
            });
        }
        assert!(!failed_on_resource(&killed));
        let stages = [Stage::new(0, StageKind::Correctness)];
        let outputs = [killed];
        let again = run_again(
            &stages[0],
            &outputs[0],
            &stages,
            &outputs,
            Default::default(),
        );
        assert_eq!(again, Again::No);
    }

    #[test]
    fn a_tool_that_ran_out_of_time_is_run_again_alone_only_where_the_program_finished() {
        use crate::exercise::manifest::Tool;
        use crate::tools::runner::Exit;
        let timed_out = |o: Output| match o {
            Output::Ran { run: Ok(mut f), .. } => {
                f.exit = Exit::TimedOut;
                f
            }
            _ => unreachable!(),
        };
        let sanitized = |f| Output::Sanitized {
            tool: Tool::Initcheck,
            run: Ok(crate::tools::sanitizer::ToolRun {
                tool: Tool::Initcheck,
                command: String::new(),
                records: Vec::new(),
                xml_path: Default::default(),
                finished: f,
            }),
            findings: Vec::new(),
            bounds: crate::engine::stages::Bounds::plain(Default::default()),
        };
        let plain = |f| Output::Ran {
            command: String::new(),
            run: Ok(f),
            outputs: Vec::new(),
            bounds: crate::engine::stages::Bounds::plain(Default::default()),
        };
        let tool = Stage::new(0, StageKind::Sanitize(Tool::Initcheck));
        let stages = [tool.clone(), Stage::new(0, StageKind::Correctness)];
        let finished = [sanitized(timed_out(ran(0, ""))), ran(0, "")];
        assert!(
            stalled(&tool, &finished[0], &stages, &finished),
            "the program finished: the tool stalled"
        );
        let hung = [
            sanitized(timed_out(ran(0, ""))),
            plain(timed_out(ran(0, ""))),
        ];
        assert!(
            !stalled(&tool, &hung[0], &stages, &hung),
            "the program hangs too: no second wait"
        );
        let in_time = [
            sanitized(match ran(0, "") {
                Output::Ran { run: Ok(f), .. } => f,
                _ => unreachable!(),
            }),
            ran(0, ""),
        ];
        assert!(!stalled(&tool, &in_time[0], &stages, &in_time));
        let mut outputs = finished;
        let again = [Again::Full, Again::No];
        assert_eq!(
            rerun_alone(&stages, &mut outputs, &again, &|_, _| ran(0, "alone")),
            1
        );
        assert!(
            matches!(&outputs[0], Output::Ran { run: Ok(f), .. } if f.output().contains("alone"))
        );
    }

    #[test]
    fn a_stalled_tool_waits_alone_only_as_long_as_its_peers_took_and_a_program_stalls_alone_once() {
        use crate::exercise::manifest::Tool;
        use crate::tools::runner::{Exit, Finished};
        use std::time::Duration;
        let finished = |exit, secs| Finished::ended(exit, Duration::from_secs(secs));
        let tool = |tool, exit, secs| Output::Sanitized {
            tool,
            run: Ok(crate::tools::sanitizer::ToolRun {
                tool,
                command: String::new(),
                records: Vec::new(),
                xml_path: Default::default(),
                finished: finished(exit, secs),
            }),
            findings: Vec::new(),
            bounds: crate::engine::stages::Bounds::plain(Default::default()),
        };
        let plain = |secs| Output::Ran {
            command: String::new(),
            run: Ok(finished(Exit::Code(0), secs)),
            outputs: Vec::new(),
            bounds: crate::engine::stages::Bounds::plain(Default::default()),
        };
        // Subject 0 stalls under both tools (its plain run finished); subject 1's initcheck took 12 s.
        let stages = [
            Stage::new(0, StageKind::Sanitize(Tool::Initcheck)),
            Stage::new(0, StageKind::Sanitize(Tool::Racecheck)),
            Stage::new(0, StageKind::Correctness),
            Stage::new(1, StageKind::Sanitize(Tool::Initcheck)),
            Stage::new(1, StageKind::Correctness),
        ];
        let outputs = [
            tool(Tool::Initcheck, Exit::TimedOut, 90),
            tool(Tool::Racecheck, Exit::TimedOut, 90),
            plain(1),
            tool(Tool::Initcheck, Exit::Code(0), 12),
            plain(1),
        ];
        let limit = Duration::from_secs(90);
        let again: Vec<Again> = stages
            .iter()
            .zip(&outputs)
            .map(|(s, o)| run_again(s, o, &stages, &outputs, limit))
            .collect();
        assert_eq!(
            again[0],
            Again::Stalled(Duration::from_secs(48)),
            "4 x the 12 s of the finished initcheck"
        );
        assert_eq!(
            again[1],
            Again::Stalled(Duration::from_secs(50)),
            "no other racecheck finished: 50x the program's own plain run"
        );
        assert_eq!(&again[2..], [Again::No; 3]);
        let limits = std::sync::Mutex::new(Vec::new());
        let mut rerun = outputs;
        let count = rerun_alone(&stages, &mut rerun, &again, &|s, l| {
            limits.lock().unwrap().push(l);
            tool(
                if s.kind == StageKind::Sanitize(Tool::Racecheck) {
                    Tool::Racecheck
                } else {
                    Tool::Initcheck
                },
                Exit::TimedOut,
                l.unwrap().as_secs(),
            )
        });
        assert_eq!(
            (count, limits.into_inner().unwrap()),
            (1, vec![Some(Duration::from_secs(48))]),
            "stalled alone too: racecheck is not waited for again"
        );
        let slow = [tool(Tool::Racecheck, Exit::TimedOut, 90), plain(70)];
        assert_eq!(
            run_again(&stages[1], &slow[0], &stages[1..3], &slow, limit),
            Again::Stalled(limit),
            "never above the configured limit"
        );
        let quick = [
            tool(Tool::Initcheck, Exit::TimedOut, 90),
            plain(1),
            tool(Tool::Initcheck, Exit::Code(0), 2),
            plain(1),
        ];
        let quick_stages = [
            stages[0].clone(),
            stages[2].clone(),
            stages[3].clone(),
            stages[4].clone(),
        ];
        assert_eq!(
            run_again(&quick_stages[0], &quick[0], &quick_stages, &quick, limit),
            Again::Stalled(pace::FLOOR),
            "never below the floor"
        );
    }
}
