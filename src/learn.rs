//! The learner's loop: the progress file, a check recorded, what comes next, and `watch`.

use super::*;
use anstream::eprintln;

/// The progress file; a problem with it is shown once and never stops a command.
pub(crate) fn load_state(wb: &Workbook) -> grader::learner::state::Loaded {
    let loaded = grader::learner::state::load(&wb.root);
    if let Some(problem) = &loaded.problem {
        eprintln!("warning: {problem}");
    }
    loaded
}

pub(crate) fn save_state(state: &grader::learner::state::Loaded) {
    match state.save() {
        Ok(Some(moved)) => eprintln!(
            "note: the damaged progress file was moved to {}",
            moved.display()
        ),
        Ok(None) => {}
        Err(e) => eprintln!("warning: progress not saved: {e}"),
    }
}

/// The exercise `id` names: an id, or a path from the current folder (`reduce.cu`, `.`).
pub(crate) fn resolve_here<'a>(wb: &'a Workbook, id: &str) -> Result<&'a Exercise> {
    let cwd = std::env::current_dir()?;
    Ok(wb.resolve_from(id, &cwd)?)
}

/// The exercise whose folder the command runs in, if it runs in one.
fn exercise_here(wb: &Workbook) -> Option<&Exercise> {
    wb.exercise_at(&std::env::current_dir().ok()?)
}

/// The first exercise on the learning path that has not passed yet.
pub(crate) fn next_pending(wb: &Workbook) -> Option<&Exercise> {
    let state = load_state(wb);
    let next = state.state.next_pending(wb.path.order())?;
    wb.exercises.iter().find(|e| e.id() == next)
}

/// After `done` passed: the next pending exercise on the path, why it comes next (its place in its
/// chapter, or the new chapter's purpose) and where its lesson is.
pub(crate) fn say_next(wb: &Workbook, done: &Exercise, out: &'static dyn Reporter) {
    let Some(next) = next_pending(wb) else {
        out.say("Every exercise is done.");
        return;
    };
    let m = &next.manifest;
    let found = match m.expected_finding() {
        Some((tool, _)) => format!("found with {}", tool.name()),
        None if m.manifest.perf.is_some() => "a kernel that is right and slow".into(),
        None => "found by its cases".into(),
    };
    let level = m
        .level()
        .map(|l| format!("level {l}, "))
        .unwrap_or_default();
    out.say(&format!(
        "Next: {} ({}; {level}{found}): `cargo xtask check {}`; its lesson: book/src/{}",
        next.id(),
        m.manifest.bug_class,
        next.id(),
        m.manifest.chapter
    ));
    if let Some(why) = wb.path.why_next(done.id(), next.id()) {
        out.say(&format!("Why: {why}"));
    }
}

/// Check one exercise and record a pass in the progress file.
pub(crate) fn check_and_record(
    ctx: &Context,
    wb: &Workbook,
    ex: &Exercise,
    out: &'static dyn Reporter,
) -> grader::plans::check::CheckReport {
    let report = grader::plans::check::check(ctx, wb, ex, progress(out));
    if report.outcome == grader::judge::verdict::Outcome::Pass
        && !grader::tools::runner::interrupted()
    {
        let mut state = load_state(wb);
        state.state.mark_done(
            ex.id(),
            report.timing.as_ref().map(|t| t.ratio_to_reference),
        );
        save_state(&state);
    }
    report
}

/// `path` as the learner would type it from the current folder (`exercises/03-race/reduce.cu`
/// from the root, `reduce.cu` inside its folder, `../../book/src/race.md`).
pub(crate) fn from_here(path: &Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let Ok(cwd) = std::env::current_dir() else {
        return path.display().to_string();
    };
    let common = path
        .components()
        .zip(cwd.components())
        .take_while(|(a, b)| a == b)
        .count();
    // Only the root in common: the absolute path says it better than a row of `..`.
    if common <= 1 {
        return path.display().to_string();
    }
    let mut rel = PathBuf::new();
    for _ in cwd.components().skip(common) {
        rel.push("..");
    }
    rel.extend(path.components().skip(common));
    if rel.as_os_str().is_empty() {
        ".".into()
    } else {
        rel.display().to_string()
    }
}

/// How `check`'s text is shown: paths from where the learner stands, the jargon for `--verbose`.
fn check_view(wb: &Workbook, ex: &Exercise, verbose: bool) -> grader::report::CheckView {
    grader::report::CheckView {
        source_shown: Some(from_here(&wb.learner_path(ex))),
        verbose,
        command: typed_name(),
        lesson: from_here(&wb.root.join("book/src").join(&ex.manifest.manifest.chapter)),
        recordings: grader::learner::recordings_of(wb, ex)
            .iter()
            .map(|r| from_here(r))
            .collect(),
    }
}

pub(crate) fn show_check(
    report: &grader::plans::check::CheckReport,
    wb: &Workbook,
    ex: &Exercise,
    out: &'static dyn Reporter,
    streamed: bool,
    verbose: bool,
) -> Result<()> {
    // Ctrl-C killed the tools: what they "reported" is the interruption, not a verdict on the file.
    if grader::tools::runner::interrupted() {
        eprintln!("interrupted: {} was not checked", ex.id());
        return Ok(());
    }
    let view = check_view(wb, ex, verbose);
    let shown = Shown(report, || {
        grader::report::check_text_for(report, ex, &wb.learner_path(ex), &view)
    });
    if streamed {
        out.streamed(&shown)
    } else {
        out.result(&shown)
    }
}

/// Check `current` now and on every save; after a pass, go on to the next pending exercise. Returns
/// when every exercise is done (Ctrl-C quits earlier, through the handler in `main`).
pub(crate) fn watch<'a>(
    ctx: &Context,
    wb: &'a Workbook,
    current: &mut &'a Exercise,
    poll: bool,
    verbose: bool,
    out: &'static dyn Reporter,
) -> Result<ExitStatus> {
    loop {
        let ex = *current;
        let file = wb.learner_path(ex);
        // Watching starts before the check, so that a save during a check is not missed.
        let watcher = grader::learner::watch::FileWatcher::new(&file, poll)
            .with_context(|| format!("watching {}", wb.display_path(&file)))?;
        if let Some(why) = &watcher.fallback_reason {
            eprintln!("note: file notifications do not work here ({why}); polling instead");
        }
        loop {
            let report = check_and_record(ctx, wb, ex, out);
            show_check(&report, wb, ex, out, true, verbose)?;
            if report.outcome == grader::judge::verdict::Outcome::Pass {
                break;
            }
            out.say(&format!(
                "\nwatching {} ({}); save it to check again, Ctrl-C to quit",
                wb.display_path(&file),
                watcher.mode
            ));
            watcher
                .wait_for_save()
                .with_context(|| format!("watching {}", wb.display_path(&file)))?;
        }
        let Some(next) = next_pending(wb) else {
            out.say("\nEvery exercise is done. Well found, well fixed.");
            return Ok(ExitStatus::Pass);
        };
        *current = next;
        out.say(&format!("\n{} passed. Next: {}\n", ex.id(), current.id()));
    }
}

/// `check`: one exercise (the next pending one without an id), its pass recorded.
pub(crate) fn check(
    id: Option<String>,
    settings: &PlanSettings,
    out: &'static dyn Reporter,
) -> Result<ExitStatus> {
    let wb = open_workbook_about(id.as_deref())?;
    let ex = match (&id, exercise_here(&wb)) {
        (Some(id), _) => resolve_here(&wb, id)?,
        (None, Some(here)) => {
            out.note(&format!(
                "checking {}, the exercise of this folder",
                here.id()
            ));
            here
        }
        (None, None) => match next_pending(&wb) {
            Some(next) => {
                out.note(&format!(
                    "checking {}, the next pending exercise",
                    next.id()
                ));
                next
            }
            None => {
                out.say("Every exercise is done: `cargo xtask list` shows them, `cargo xtask check <id>` checks one again.");
                return Ok(ExitStatus::Pass);
            }
        },
    };
    let ctx = context(&wb, settings, out)?;
    let report = check_and_record(&ctx, &wb, ex, out);
    show_check(&report, &wb, ex, out, false, settings.verbose)?;
    if report.outcome.exit() == ExitStatus::Pass {
        say_next(&wb, ex, out);
    }
    Ok(report.outcome.exit())
}

/// `list`: every exercise, its status and level, the next one marked.
pub(crate) fn list(out: &'static dyn Reporter) -> Result<ExitStatus> {
    let wb = open_workbook()?;
    let state = load_state(&wb);
    let entries = grader::learner::list(&wb, &state.state);
    out.result(&Shown(&entries, || grader::report::list_text(&entries)))?;
    Ok(ExitStatus::Pass)
}

/// `hint`: the next hint of an exercise, and the ones already shown.
pub(crate) fn hint(id: &str, out: &'static dyn Reporter) -> Result<ExitStatus> {
    let wb = open_workbook_about(Some(id))?;
    let ex = resolve_here(&wb, id)?;
    let mut state = load_state(&wb);
    let hints = grader::learner::reveal_hint(ex, &mut state.state);
    save_state(&state);
    out.result(&Shown(&hints, || grader::report::hints_text(&hints)))?;
    Ok(ExitStatus::Pass)
}

/// `reset`: the exercise's original back (the learner's file kept aside), marked pending again.
pub(crate) fn reset(id: &str, out: &'static dyn Reporter) -> Result<ExitStatus> {
    let wb = open_workbook_about(Some(id))?;
    let ex = resolve_here(&wb, id)?;
    let again = format!("{} reset {}", typed_name(), ex.id());
    let reset = grader::learner::reset(&wb, ex, &again)?;
    let mut was_done = false;
    if reset.restored {
        let mut state = load_state(&wb);
        was_done = state.state.mark_pending(ex.id());
        if was_done {
            save_state(&state);
        }
    }
    out.result(&Shown(&reset, || grader::report::reset_text(&reset)))?;
    if was_done {
        out.say(&format!("{} is pending again.", ex.id()));
    }
    Ok(ExitStatus::Pass)
}

/// `watch`: check the exercise (the next pending one without an id) on every save.
pub(crate) fn watch_from(
    id: Option<String>,
    poll: bool,
    settings: &PlanSettings,
    out: &'static dyn Reporter,
) -> Result<ExitStatus> {
    let wb = open_workbook_about(id.as_deref())?;
    let mut current = match (&id, exercise_here(&wb)) {
        (Some(id), _) => resolve_here(&wb, id)?,
        (None, Some(here)) => here,
        (None, None) => match next_pending(&wb) {
            Some(next) => next,
            None => {
                out.say("Every exercise is done: `cargo xtask list` shows them, `cargo xtask watch <id>` watches one again.");
                return Ok(ExitStatus::Pass);
            }
        },
    };
    let ctx = context(&wb, settings, out)?;
    watch(&ctx, &wb, &mut current, poll, settings.verbose, out)
}
