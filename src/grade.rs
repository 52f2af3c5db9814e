//! `grade`: the class, one worker per GPU, then the gradebook (and `grade merge`).

use super::*;
use anstream::eprintln;

/// `grade`: the class, one worker per GPU, then the gradebook.
pub(crate) fn grade(
    args: GradeArgs,
    settings: &PlanSettings,
    out: &'static dyn Reporter,
) -> Result<ExitStatus> {
    use grader::plans::grade::{self, ClassJob};
    let Some(submissions) = args.submissions else {
        anyhow::bail!("give the submissions folder: cargo xtask grade SUBMISSIONS [--out DIR] --secret-seed N")
    };
    let wb = open_workbook()?;
    let submissions = submissions
        .canonicalize()
        .with_context(|| submissions.display().to_string())?;
    let exercises: Vec<&Exercise> = if args.exercises.is_empty() {
        wb.exercises.iter().collect()
    } else {
        args.exercises
            .iter()
            .map(|id| wb.resolve(id))
            .collect::<Result<_, _>>()?
    };
    let secret = class_secret(args.secret_seed, args.secret.as_deref(), &wb, &submissions)?;
    let roster = grader::class::roster::discover(&submissions)?;
    // Without --exercises, the exercises someone submitted (all of them where nobody did): a class
    // that did one exercise gets one column, not 66.
    let exercises = if args.exercises.is_empty() {
        let submitted: Vec<&Exercise> = exercises
            .iter()
            .copied()
            .filter(|ex| {
                roster
                    .students
                    .iter()
                    .any(|s| grader::class::roster::find_file(s, ex, &wb).is_some())
            })
            .collect();
        if submitted.is_empty() {
            exercises
        } else {
            submitted
        }
    } else {
        exercises
    };
    let dir = std::env::current_dir()?.join(&args.out);
    std::fs::create_dir_all(&dir).with_context(|| dir.display().to_string())?;
    let hidden: Vec<PathBuf> = [
        Some(submissions.clone()),
        Some(dir.clone()),
        secret.file.clone(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let contexts = worker_contexts(&wb, settings, out, &args.gpus, &hidden)?;
    let job = ClassJob {
        submissions,
        roster,
        exercises,
        secret,
        out: dir.clone(),
        shard: args.shard,
        regrade: args.regrade,
        chunk: args.chunk,
    };
    let bar = out.progress_bar();
    let results = grade::grade_class(&wb, contexts, &job, &|e| out.grade_event(&e, bar.as_ref()))?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    if grader::tools::runner::interrupted() {
        eprintln!("interrupted: the journal keeps every pair graded so far; run the same command again to go on");
        return Ok(ExitStatus::Interrupted);
    }
    // A shard writes only its journal; `grade merge` makes the gradebook of them all.
    if job.shard.is_some() {
        out.say(&format!(
            "shard {} graded {} pair(s) into {}",
            job.shard.map(|s| s.to_string()).unwrap_or_default(),
            results.len(),
            grade::journal_path(&job.out, job.shard).display()
        ));
        return Ok(grade_exit(&results));
    }
    finish_gradebook(&job.out, out)
}

/// The instructor's secret: `--secret-seed`, else `--secret FILE` (outside the workbook and the
/// submissions), else `CUDABUGS_SECRET_SEED`; refused where it does not fit the workbook.
fn class_secret(
    seed: Option<u64>,
    file: Option<&Path>,
    wb: &Workbook,
    submissions: &Path,
) -> Result<grader::class::secret::Secret> {
    use grader::class::secret::Secret;
    let secret = match (seed, file, grader::environment::text(grader::environment::SECRET_SEED)) {
        (Some(seed), _, _) => Secret::from_seed(seed),
        (None, Some(file), _) => Secret::load(file, &[&wb.root, submissions])?,
        (None, None, Some(v)) => Secret::from_seed(v.trim().parse().with_context(|| format!("CUDABUGS_SECRET_SEED={v} is not a number"))?),
        (None, None, None) => anyhow::bail!("the hidden cases need the instructor's secret: --secret-seed N, --secret FILE (outside the workbook) or CUDABUGS_SECRET_SEED"),
    };
    if let Some(problem) = secret
        .problems(&wb.exercises.iter().collect::<Vec<_>>())
        .first()
    {
        anyhow::bail!("{problem}");
    }
    Ok(secret)
}

/// A context per GPU (`--gpus`, else every visible one), each set up as a grade worker.
fn worker_contexts(
    wb: &Workbook,
    settings: &PlanSettings,
    out: &'static dyn Reporter,
    requested: &[String],
    hidden: &[PathBuf],
) -> Result<Vec<Context>> {
    let gpus = grader::plans::grade::worker_gpus(requested);
    let mut contexts = Vec::new();
    for (k, gpu) in gpus.iter().enumerate() {
        let mut ctx = context(wb, settings, out)?;
        grader::plans::grade::configure_worker(
            &mut ctx.config,
            gpu.clone(),
            (k, gpus.len()),
            hidden,
        );
        contexts.push(ctx);
    }
    Ok(contexts)
}

/// The exit code of a batch: 3 where the grader's own tools failed on a pair, 5 where an exercise
/// needs a newer GPU than this one (not gradable here), 6 where the GPU stages were skipped, else 0
/// (students' failures are grades, not errors).
pub(crate) fn grade_exit(results: &[grader::plans::grade::PairResult]) -> ExitStatus {
    use grader::plans::grade::PairState;
    results
        .iter()
        .map(|r| match r.state {
            PairState::ToolError { .. } => ExitStatus::ToolError,
            PairState::Unsupported { .. } => ExitStatus::NotGradable,
            PairState::Skipped { .. } => ExitStatus::Skipped,
            _ => ExitStatus::Pass,
        })
        .fold(ExitStatus::Pass, ExitStatus::worst)
}

/// Every journal in `out` into the gradebook; exit 1 while pairs are missing.
pub(crate) fn finish_gradebook(dir: &Path, out: &'static dyn Reporter) -> Result<ExitStatus> {
    let grader::plans::grade::Merged {
        info,
        results,
        missing,
    } = grader::plans::grade::merge(dir)?;
    let mut written = grader::report::gradebook::write_all(&info, &results, dir)
        .with_context(|| format!("writing the gradebook into {}", dir.display()))?;
    // The similarity report reads the students' files again; the exercises' texts are embedded, so the root does not matter.
    let wb = Workbook::new(dir.to_path_buf(), catalog::EXERCISES, catalog::HARNESS)?;
    written.extend(
        grader::report::gradebook::write_similarity(dir, &info, &wb)
            .with_context(|| format!("writing the similarity report into {}", dir.display()))?,
    );
    let status = if missing.is_empty() {
        grade_exit(&results)
    } else {
        ExitStatus::Fail
    };
    let finished = serde_json::json!({ "event": "finished", "gradebook": dir, "pairs": results.len(), "missing": missing, "files": written.len(), "exit_code": status.code() });
    // The last line of the stream of grade events (`grade_event`).
    out.streamed(&Shown(&finished, || {
        let book = grader::report::gradebook::Gradebook::new(&info, &results);
        let mut text = grader::report::gradebook_text(&book);
        if !missing.is_empty() {
            text += &format!(
                "{} pair(s) not graded yet (a shard still running or failed): {}\n",
                missing.len(),
                missing
                    .iter()
                    .take(8)
                    .map(|(s, e)| format!("{s}/{e}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        text += &grader::report::gradebook::pending_line(&book).unwrap_or_default();
        text + &format!(
            "gradebook: {} ({} files: grades.csv, feedback/, gradescope/, summary.md)\n",
            dir.display(),
            written.len()
        )
    }))?;
    Ok(status)
}
