//! The tool-aware rule's flag: the compiled program is the gate (what its host code reaches,
//! `judge::reach`, and its kernels' clock reads), and the text rules explain it.

use super::{clock_reads_beyond, scan, Exercise, SassClockRead};

/// What the compiled program says about a submission: its kernels' clock reads beyond the
/// reference fix's, and what its host object reaches beyond the exercise's two versions.
#[derive(Debug, Clone, Default)]
pub struct Compiled {
    pub clock_reads: Vec<SassClockRead>,
    pub host: Host,
}

/// What is known of the host object's reach.
#[derive(Debug, Clone, Default)]
pub enum Host {
    /// Read: what it reaches beyond the exercise's versions (nothing, for most fixes).
    Beyond(Vec<crate::judge::reach::Beyond>),
    /// The analysis ran and could not read it (the file did not compile alone, objdump failed):
    /// a person looks.
    Unreadable(String),
    /// No analysis here (no objdump, no build): the text rules stand in for it.
    #[default]
    NotAnalysed,
}

/// The findings of `submitted`'s text alone as the flag (a machine with no compiled evidence).
pub fn flag(ex: &Exercise, submitted: &str) -> Option<crate::judge::speed::Flag> {
    flag_with(ex, submitted, &Compiled::default())
}

/// The flag of the tool-aware rule, or None. The gate is the compiled program: what its host code
/// reaches beyond the exercise's versions (`judge::reach`) and its kernels' clock reads beyond the
/// reference's. The text rules only explain a flag (their findings follow the compiled ones), except
/// where nothing compiled could be read here (`Host::NotAnalysed`), when they stand in for it.
pub fn flag_with(
    ex: &Exercise,
    submitted: &str,
    compiled: &Compiled,
) -> Option<crate::judge::speed::Flag> {
    let text = scan(ex, submitted);
    let mut evidence: Vec<String> = match &compiled.host {
        Host::Beyond(found) => found
            .iter()
            .map(|b| format!("its compiled code {b}"))
            .collect(),
        Host::Unreadable(why) => vec![format!(
            "what its compiled code reaches could not be read ({why})"
        )],
        Host::NotAnalysed => text
            .iter()
            .map(|s| format!("line {}: {} (`{}`)", s.line, s.kind.describe(), s.token))
            .collect(),
    };
    evidence.extend(compiled.clock_reads.iter().map(|r| format!("its compiled kernel `{}` reads the GPU's clock {} (`{}`), which the reference fix's does not", r.function, r.register(), r.instruction)));
    if evidence.is_empty() {
        return None;
    }
    let mut shown: Vec<String> = evidence.iter().take(4).cloned().collect();
    if !matches!(compiled.host, Host::NotAnalysed) {
        shown.extend(text.iter().take(2).map(|s| {
            format!(
                "its text, line {}: {} (`{}`)",
                s.line,
                s.kind.describe(),
                s.token
            )
        }));
    }
    let hidden = evidence.len().saturating_sub(4);
    let more = if hidden > 0 {
        format!("; and {hidden} more")
    } else {
        String::new()
    };
    Some(crate::judge::speed::Flag::new(
        crate::judge::speed::Rule::ToolAware,
        format!("{}{more}", shown.join("; ")),
    ))
}

/// `flag_with` for a submission the scheduler built: the clock reads of `subject`'s compiled
/// kernels (its Sass stage in `results`) beyond those of the reference's (`reference`), and what its
/// host object reaches beyond the untouched exercise's and the reference fix's (each compiled once
/// and kept: `engine::stages::workbook_version`).
pub fn flag_built(
    ctx: &crate::engine::context::Context,
    ex: &Exercise,
    submitted: &str,
    results: &crate::engine::scheduler::Results,
    subject: usize,
    reference: &crate::engine::plan::Stage,
) -> Option<crate::judge::speed::Flag> {
    use crate::engine::plan::StageKind;
    use crate::engine::stages::Output;
    let mine = results.get(subject, StageKind::Sass);
    let clock_reads = match (mine, results.get_run(reference)) {
        (
            Some(Output::Sass {
                reads: Ok(mine), ..
            }),
            Some(Output::Sass {
                reads: Ok(theirs), ..
            }),
        ) => clock_reads_beyond(mine, theirs),
        _ => Vec::new(),
    };
    let host = match mine {
        // Not compiled for it (`engine::stages::sass`): a version reaches nothing beyond itself.
        _ if ex.is_own_version(submitted) => Host::Beyond(Vec::new()),
        Some(Output::Sass {
            host: Some(learner),
            ..
        }) => host_beyond(ctx, ex, submitted, learner),
        _ => Host::NotAnalysed,
    };
    flag_with(ex, submitted, &Compiled { clock_reads, host })
}

/// What `learner` (the host reach of `submitted`) reaches beyond the exercise's two versions.
pub fn host_beyond(
    ctx: &crate::engine::context::Context,
    ex: &Exercise,
    submitted: &str,
    learner: &Result<crate::tools::reach::Reach, crate::engine::stages::ReachError>,
) -> Host {
    use crate::engine::stages::{workbook_version, ReachError};
    use crate::judge::reach::{beyond, Version};
    let learner = match learner {
        Ok(r) => r,
        Err(ReachError::NoObjdump) => return Host::NotAnalysed,
        Err(e) => return Host::Unreadable(e.to_string()),
    };
    let versions = (
        workbook_version(ctx, ex, ex.original),
        workbook_version(ctx, ex, ex.solution),
    );
    let (original, reference) = match versions {
        (Ok(o), Ok(r)) => (o, r),
        (Err(e), _) | (_, Err(e)) => {
            return Host::Unreadable(format!("the exercise's own versions: {e}"));
        }
    };
    let regions = |t: &str| crate::exercise::regions::parse(t).unwrap_or_default();
    let (mine, theirs, fixed) = (
        regions(submitted),
        regions(ex.original),
        regions(ex.solution),
    );
    Host::Beyond(beyond(
        Version {
            reach: learner,
            regions: &mine,
        },
        Version {
            reach: &original,
            regions: &theirs,
        },
        Version {
            reach: &reference,
            regions: &fixed,
        },
    ))
}
