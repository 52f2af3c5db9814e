//! The original's and the reference fix's measurements, kept between a learner's checks (and
//! between `grade`'s chunks).
//!
//! Neither changes while the learner edits, yet every check used to profile both again: 62-launches'
//! original alone was 288 launches under ncu. So each of their timed runs (ncu's log, the grader's
//! clock record, the timeline) is kept under a key of everything that decides the measurement: the
//! GPU and its driver, the binary's content, the bench, the profiler and what it collects. A changed
//! key is a new measurement.
//!
//! The reference fix's whole call is timed afresh every time all the same: its outputs are what each
//! of the learner's timed calls is compared with. Where the judged time is ncu's, that call is also
//! the check that the GPU still times them as it did (`same_gpu`): outside `BAND` of the call of the
//! run that took the kept measurements, everything kept is measured again in the same run. Nothing
//! the learner's program does reaches what is kept: the original and the reference fix run in
//! folders of their own, and what is kept lies in the work root, which no run can see.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::engine::context::Context;
use crate::engine::plan::{Stage, Submission};
use crate::exercise::manifest::Clock;
use crate::exercise::workbook::Exercise;
use crate::tools::launcher::{Kept, Launcher};
use crate::tools::nvcc::Built;

/// Kept measurements from an older layout are not read.
const FORMAT: &str = "kept-1";

/// How far the reference fix's fresh whole call may stray from its kept one before the kept
/// measurements are taken again. What is kept is either counted (launches, bytes, instructions) or
/// timed by ncu at base clocks (within about 1% from one process to the next), so the band only has
/// to catch a GPU that now runs differently (another tenant, a throttled or different card). The
/// whole calls themselves move more: on an H100 a minute apart, 62-launches' 55 us call moved by
/// 11% and 57-reduction's 33 ms call (64 MB through the host) by 14%.
pub const BAND: f64 = 1.25;

/// Where a plan keeps an exercise's measurements: beside its submissions' folders (check's and
/// grade's are apart: each builds its own binaries), inside the work root no run can see.
pub fn dir(ctx: &Context, sub: &Submission) -> PathBuf {
    // One folder per GPU a grade's workers time on: each has its own measurements and reference call.
    let gpu = format!("gpu-{}", ctx.config.gpu.as_deref().unwrap_or("any"));
    sub.work
        .parent()
        .map_or_else(|| sub.work.join("kept"), |p| p.join("kept"))
        .join(gpu.replace(['/', ','], "_"))
}

/// Everything kept in `dir`, gone: the next plan measures again.
pub fn forget(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

/// The launcher of one timed stage: a `Kept` one where the submission keeps this stage (confirming
/// runs are always fresh), None (`ctx`'s own) otherwise. `what` is the stage's own part of the key
/// (the profiler's target, the harness's arguments); `leave`, the files not kept.
pub fn launcher<'a>(
    ctx: &'a Context,
    sub: &Submission,
    stage: &Stage,
    built: &Built,
    what: &str,
    leave: Vec<PathBuf>,
) -> Option<Kept<'a>> {
    let ex = sub.exercise()?;
    if stage.run >= crate::engine::plan::CONFIRMING_RUNS || !sub.keeps.contains(&stage.kind) {
        return None;
    }
    let bench = sub
        .cases()
        .bench_input
        .file_name()?
        .to_string_lossy()
        .into_owned();
    shelf(
        ctx,
        dir(ctx, sub),
        ex,
        &format!("{}-{}", sub.variant, stage.kind.id().replace(':', "-")),
        built,
        &[&bench, what],
        leave,
    )
}

/// A `Kept` launcher in `dir` for `name`'s run of `built` for `ex` (one kept run per name: an
/// older key's is removed), keyed by the binary's content, `parts`, the GPU, its driver and the
/// profiler. None where runs are replayed from a recording or recorded (a recording must hold every
/// run), or the binary cannot be read.
pub fn shelf<'a>(
    ctx: &'a Context,
    dir: PathBuf,
    ex: &Exercise,
    name: &str,
    built: &Built,
    parts: &[&str],
    leave: Vec<PathBuf>,
) -> Option<Kept<'a>> {
    if ctx.launcher.replays() || ctx.launcher.records() {
        return None;
    }
    let content = built.content()?.to_hex();
    let tool = |p: Option<&Path>| {
        p.and_then(|p| {
            std::fs::metadata(p)
                .ok()
                .map(|m| (p.to_path_buf(), m.len()))
        })
    };
    let gpu = ctx.gpu_info().map(|g| g.name.clone()).unwrap_or_default();
    let fixed = [
        FORMAT.to_string(),
        ex.id().to_string(),
        name.to_string(),
        content.to_string(),
        gpu,
        crate::engine::context::driver_version().unwrap_or_default(),
        format!("{:?}", ctx.config.gpu),
        format!("{:?}", tool(ctx.tools.ncu.as_deref())),
    ];
    let key = crate::hash::stable(
        &fixed
            .iter()
            .map(String::as_str)
            .chain(parts.iter().copied())
            .collect::<Vec<_>>(),
    );
    let prefix = format!("{name}-");
    let stem = format!("{prefix}{key:016x}");
    // One measurement per name: an older key's is gone with its files.
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let file = e.file_name().to_string_lossy().into_owned();
            if file.starts_with(&prefix) && !file.starts_with(&stem) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    Some(Kept {
        inner: ctx.launcher.as_ref(),
        dir,
        stem,
        leave,
    })
}

/// The reference fix's whole call when its kept measurements were taken.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Anchor {
    reference_call_ns: f64,
    taken: String,
}

fn anchor_path(dir: &Path) -> PathBuf {
    dir.join("anchor.json")
}

/// Note the reference fix's whole call of the plan that took the measurements kept in `dir`.
pub fn anchor(dir: &Path, reference_call_ns: f64) {
    let a = Anchor {
        reference_call_ns,
        taken: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    };
    if let Ok(text) = serde_json::to_string_pretty(&a) {
        let _ = std::fs::create_dir_all(dir);
        let _ = crate::exercise::workbook::write_atomically(&anchor_path(dir), &text);
    }
}

/// Whether kept measurements still stand, each with its line for the report.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    /// They stand: served again.
    Stands(String),
    /// They do not: why they are taken again.
    Stale(String),
}

/// Whether the measurements kept in `dir` still stand, with a line for the report, or why they are
/// taken again. Where the judged time is ncu's (`Clock::Kernel`), the GPU must still
/// time the reference fix's whole call as it did when they were taken, within `BAND`. Where it is
/// the whole call's, every call the verdict reads is timed afresh and what is kept is counted
/// (launches, bytes, instructions) or shown (ncu's kernel times): a whole call of 60 us moved by
/// up to 1.6x between two checks on an H100's host, so it is no test of the GPU.
pub fn same_gpu(dir: &Path, reference_call_ns: Option<f64>, clock: Clock) -> Standing {
    let Some(now) = reference_call_ns else {
        return Standing::Stale("the reference fix's whole call has no time in this run".into());
    };
    let Some(a) = std::fs::read_to_string(anchor_path(dir))
        .ok()
        .and_then(|t| serde_json::from_str::<Anchor>(&t).ok())
    else {
        return Standing::Stale(
            "the kept measurements have no call of the reference fix to compare with".into(),
        );
    };
    if clock == Clock::Call {
        return Standing::Stands(format!(
            "the original's and the reference fix's profiles kept from {} (counts and kernel times at base clocks; every whole call judged here was timed now)",
            a.taken
        ));
    }
    let ratio = now / a.reference_call_ns;
    let line = format!(
        "the original's and the reference fix's profiles kept from {} (the reference fix's whole call now {:.1} us, then {:.1} us: {ratio:.3}x)",
        a.taken,
        now / 1e3,
        a.reference_call_ns / 1e3
    );
    if (1.0 / BAND..=BAND).contains(&ratio) {
        Standing::Stands(line)
    } else {
        Standing::Stale(format!(
            "{line}, outside the {:.0}% band: measured again",
            (BAND - 1.0) * 100.0
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_measurements_stand_while_the_reference_call_times_the_same_and_go_when_not() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("kept");
        assert!(
            matches!(same_gpu(&dir, Some(1e6), Clock::Kernel), Standing::Stale(_)),
            "nothing to compare with: measured again"
        );
        anchor(&dir, 1_000_000.0);
        let Standing::Stands(line) = same_gpu(&dir, Some(1_050_000.0), Clock::Kernel) else {
            panic!("kept within the band")
        };
        assert!(line.contains("1050.0 us, then 1000.0 us: 1.050x"), "{line}");
        assert!(matches!(
            same_gpu(&dir, Some(0.85e6), Clock::Kernel),
            Standing::Stands(_)
        ));
        for strayed in [1.3e6, 0.78e6] {
            let Standing::Stale(why) = same_gpu(&dir, Some(strayed), Clock::Kernel) else {
                panic!("{strayed} is outside the band")
            };
            assert!(
                why.contains("outside the 25% band: measured again"),
                "{why}"
            );
        }
        assert!(
            matches!(same_gpu(&dir, None, Clock::Kernel), Standing::Stale(_)),
            "no fresh call: measured again"
        );
        forget(&dir);
        assert!(!dir.exists());
        assert!(matches!(
            same_gpu(&dir, Some(1e6), Clock::Kernel),
            Standing::Stale(_)
        ));
    }
}
