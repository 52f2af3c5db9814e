//! `sanitize`: any CUDA program under the four compute-sanitizer tools (and ncu with --profile).

use super::*;

/// `sanitize`: any CUDA program (sources or a built binary) under the four tools, an exercise's file
/// as its exercise.
pub(crate) fn sanitize(
    files: Vec<PathBuf>,
    bin: Option<PathBuf>,
    nvcc_flags: Vec<String>,
    profile: bool,
    args: Vec<String>,
    settings: &PlanSettings,
    out: &'static dyn Reporter,
) -> Result<ExitStatus> {
    if files.is_empty() && bin.is_none() {
        anyhow::bail!("give the program's .cu files (`cargo xtask sanitize prog.cu -- ARGS`) or a built binary (--bin PATH)");
    }
    let cwd = std::env::current_dir()?;
    let absolute = |p: &Path| -> Result<PathBuf> {
        cwd.join(p)
            .canonicalize()
            .with_context(|| format!("{}", p.display()))
    };
    let files: Vec<PathBuf> = files.iter().map(|f| absolute(f)).collect::<Result<_>>()?;
    let bin = bin.map(|b| absolute(&b)).transpose()?;
    // Inside a workbook its folders are used; anywhere else, the current folder's.
    let root = workbook::find_root(&cwd).unwrap_or_else(|_| cwd.clone());
    let wb = Workbook::new(root, catalog::EXERCISES, catalog::HARNESS)?;
    let ctx = context(&wb, settings, out)?;
    let same = |a: &Path, b: &Path| b.canonicalize().map(|b| b == a).unwrap_or(false);
    let exercise = match files.as_slice() {
        [one] => wb.exercises.iter().find_map(|ex| {
            [
                ("learner", wb.learner_path(ex)),
                ("reference", wb.solution_path(ex)),
            ]
            .into_iter()
            .find(|(_, p)| same(one, p))
            .map(|(v, p)| (ex, v, p))
        }),
        _ => None,
    };
    let gpu_stages = ctx.gpu_stages();
    let cases = match (&exercise, gpu_stages) {
        (Some((ex, _, _)), true) => {
            grader::exercise::cases::prepare(ex, &grader::exercise::cases::dir(&wb, ex))?
        }
        _ => Default::default(),
    };
    let sub = match exercise {
        Some((ex, variant, path)) => {
            let text =
                std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
            grader::engine::plan::Submission::new(&wb, "sanitize", ex, variant, path, text, &cases)
        }
        None => grader::engine::plan::Submission::program(
            &wb,
            "sanitize",
            grader::engine::plan::Program {
                sources: files,
                nvcc_flags,
                args: args.into_iter().map(Into::into).collect(),
                prebuilt: bin,
                cwd: cwd.clone(),
                profile,
                staged: Vec::new(),
            },
        ),
    };
    let report = grader::plans::sanitize::sanitize(&ctx, &wb, sub, progress(out));
    out.result(&Sanitized {
        report: &report,
        cwd: &cwd,
    })?;
    Ok(report.outcome.exit())
}

/// A sanitize report, the one result that has SARIF.
struct Sanitized<'a> {
    report: &'a grader::plans::sanitize::SanitizeReport,
    cwd: &'a Path,
}

impl output::Rendered for Sanitized<'_> {
    fn json(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(self.report)?)
    }
    fn text(&self) -> String {
        grader::report::sanitize_text(self.report, self.cwd)
    }
    fn sarif(&self) -> Option<serde_json::Value> {
        Some(grader::report::sarif::sarif(self.report, self.cwd))
    }
}
