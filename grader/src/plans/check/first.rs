//! `check`'s first phase: the stages that build the learner's file and run it under its tools and
//! on its cases, and the steps they make; the cases with a bench the learner cannot predict.

use super::*;

/// The first phase's stages: both builds of the learner's file and, unless it is one of the
/// workbook's own versions (a first check: they read nothing beyond themselves), the device code of
/// its build and the reference's (clock reads; no GPU needed); where `running` (a GPU and inputs),
/// the named tools and the cases, each starting as soon as its build is there.
pub(super) fn first_stages(tools: &[Tool], running: bool, own_version: bool) -> Vec<Stage> {
    let mut stages = vec![
        Stage::new(LEARNER, StageKind::Build(Flavor::Sanitize)),
        Stage::new(LEARNER, StageKind::Build(Flavor::Timing)),
    ];
    if !own_version {
        stages.push(Stage::new(LEARNER, StageKind::Sass));
        stages.push(Stage::new(REFERENCE, StageKind::Sass));
    }
    if running {
        stages.extend(
            tools
                .iter()
                .map(|&t| Stage::new(LEARNER, StageKind::Sanitize(t))),
        );
        stages.push(Stage::new(LEARNER, StageKind::Correctness));
    }
    stages
}

/// The steps of the learner's two builds.
pub(super) fn build_steps(ctx: &Context, results: &Results) -> Vec<Step> {
    Flavor::BOTH
        .into_iter()
        .flat_map(|flavor| {
            let output = results
                .get(LEARNER, StageKind::Build(flavor))
                .expect("built");
            verdict::build(StepName::Build(flavor), output, flavor, &ctx.arch)
        })
        .collect()
}

/// The progress line for the first phase: the builds, then (where `tools` is given: a GPU and
/// inputs) the tools and the cases.
pub(super) fn building_line(source: &str, tools: Option<&[Tool]>) -> String {
    match tools {
        None => format!("building {source} (-G and -O3 -lineinfo)"),
        Some([]) => format!("building {source} (-G and -O3 -lineinfo), then the cases (no sanitizer sees this bug class)"),
        Some([t]) => format!("building {source} (-G and -O3 -lineinfo), then compute-sanitizer --tool {t} and the cases"),
        Some(_) => format!("building {source} (-G and -O3 -lineinfo), then the four compute-sanitizer tools and the cases"),
    }
}

/// The named tools' steps (with their findings) and the cases' step.
pub(super) fn tool_and_case_steps(
    report: &mut CheckReport,
    results: &Results,
    tools: &[Tool],
    cases: &Cases,
    ex: &Exercise,
) {
    for &tool in tools {
        let sanitized = Stage::new(LEARNER, StageKind::Sanitize(tool));
        match results.get_run(&sanitized) {
            Some(Output::NotRun(b)) => {
                report
                    .steps
                    .extend(verdict::not_run(StepName::Tool(tool), &sanitized, b))
            }
            Some(o @ Output::Sanitized { findings, .. }) => {
                report.findings.extend(findings.iter().cloned());
                report
                    .steps
                    .extend(verdict::tool(StepName::Tool(tool), &sanitized, o));
            }
            _ => {}
        }
    }
    if let Some(o) = results.get(LEARNER, StageKind::Correctness) {
        report.steps.extend(verdict::correctness(
            StepName::Correctness,
            StageKind::Correctness,
            o,
            cases,
            ex.manifest.manifest.tolerance,
        ));
    }
}

/// The exercise's cases, with timed inputs the learner's program cannot predict: a bench drawn
/// with this workbook's own seed (made once, so the bench file is cached) and a
/// new variation of the calls every check.
pub(super) fn timed_cases(wb: &Workbook, ex: &Exercise) -> std::io::Result<Cases> {
    let seed_file = wb.bench_seed_file();
    let seed = match std::fs::read_to_string(&seed_file)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
    {
        Some(s) => s,
        None => {
            let s = cases::unpredictable_seed();
            crate::exercise::workbook::write_atomically(&seed_file, &format!("{s}\n"))?;
            s
        }
    };
    let bench_seed = crate::hash::stable(&[&seed.to_string(), ex.id()]);
    cases::prepare_with(
        ex,
        &cases::dir(wb, ex),
        bench_seed,
        cases::unpredictable_seed(),
    )
}
