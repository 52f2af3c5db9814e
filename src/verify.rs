//! `verify`: the workbook's own check, every exercise failing for its reason and its fix passing.

use super::*;
use anstream::{eprintln, print};

/// `verify`: every exercise (or those named) fails for its reason and its fix passes.
pub(crate) fn verify(
    ids: Vec<String>,
    record: Option<PathBuf>,
    keep: Option<PathBuf>,
    survey: bool,
    settings: &Settings,
    format: Format,
) -> Result<ExitStatus> {
    let wb = open_workbook()?;
    let selected: Vec<_> = if ids.is_empty() {
        wb.exercises.iter().collect()
    } else {
        ids.iter()
            .map(|id| wb.resolve(id))
            .collect::<Result<_, _>>()?
    };
    let ctx = context(&wb, settings, format)?;
    let opts = grader::judge::verify::VerifyOptions { keep, survey };
    let result = grader::judge::verify::verify(&ctx, &wb, &selected, &opts, progress(format));
    if let Some(path) = &record {
        let record = wb.relative_text(&serde_json::to_string_pretty(&result)?);
        std::fs::write(path, record + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    // A broken exercise fails the self-check of the whole workbook (it was named above).
    if ids.is_empty() && !wb.broken.is_empty() && result.outcome.rank() > 0 {
        if format == Format::Text {
            print!("{}", grader::report::verify_text(&result));
            eprintln!(
                "FAIL: {} exercise(s) not gradable: {}",
                wb.broken.len(),
                wb.broken
                    .iter()
                    .map(|b| b.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        } else {
            print_json(&result)?;
        }
        return Ok(ExitStatus::Fail);
    }
    emit(format, &result, || grader::report::verify_text(&result))?;
    Ok(result.outcome.exit())
}
