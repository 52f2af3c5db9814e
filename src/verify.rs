//! `verify`: the workbook's own check, every exercise failing for its reason and its fix passing.

use super::*;

/// `verify`: every exercise (or those named) fails for its reason and its fix passes.
pub(crate) fn verify(
    ids: Vec<String>,
    record: Option<PathBuf>,
    keep: Option<PathBuf>,
    survey: bool,
    settings: &PlanSettings,
    out: &'static dyn Reporter,
) -> Result<ExitStatus> {
    let wb = open_workbook()?;
    let selected: Vec<_> = if ids.is_empty() {
        wb.exercises.iter().collect()
    } else {
        ids.iter()
            .map(|id| wb.resolve(id))
            .collect::<Result<_, _>>()?
    };
    let ctx = context(&wb, settings, out)?;
    let opts = grader::plans::verify::VerifyOptions { keep, survey };
    let result = grader::plans::verify::verify(&ctx, &wb, &selected, &opts, progress(out));
    if let Some(path) = &record {
        let record = wb.relative_text(&serde_json::to_string_pretty(&result)?);
        std::fs::write(path, record + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    // A broken exercise fails the self-check of the whole workbook (it was named above).
    out.result(&Shown(&result, || grader::report::verify_text(&result)))?;
    if ids.is_empty() && !wb.broken.is_empty() && result.outcome.rank() > 0 {
        out.note(&format!(
            "FAIL: {} exercise(s) not gradable: {}",
            wb.broken.len(),
            wb.broken
                .iter()
                .map(|b| b.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        return Ok(ExitStatus::Fail);
    }
    Ok(result.outcome.exit())
}
