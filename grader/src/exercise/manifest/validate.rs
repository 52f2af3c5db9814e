//! One file: every check of a manifest, in the order they run (its tests are `tests.rs`).
//!
//! The checks a manifest must pass: on its own when parsed (`validate_fields`), and against the
//! exercise's sources (`validate_sources`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{
    check_options, find_line, Baseline, Capability, Clock, DType, Detector, Dist, Expect,
    LoadedManifest, ManifestError, Perf, Track, FORMAT_VERSION, OLDEST_FORMAT,
};
use crate::exercise::{reference, regions};

/// The largest parameter value a case may give.
pub const MAX_PARAM: i64 = 1 << 31;
/// The most elements one buffer may hold (1 GiB of f32).
pub const MAX_ELEMENTS: usize = 1 << 28;

/// Checks a manifest can make on its own (no source files needed). The first that fails is the
/// error shown, so the order is part of the behaviour.
pub(super) fn validate_fields(m: &LoadedManifest) -> Result<(), ManifestError> {
    check_format(m)?;
    check_names(m)?;
    check_cases(m)?;
    check_buffers(m)?;
    check_params(m)?;
    check_dists(m)?;
    validate_track(m)?;
    if let Some(r) = &m.manifest.rubric {
        crate::exercise::rubric::validate(r)
            .map_err(|e| error_on(m, find_line(&m.text, "[rubric]"), e.to_string()))?;
    }
    check_level_and_build(m)?;
    if let Some(expect) = &m.manifest.expect {
        validate_expect(m, expect)?;
    }
    check_hints_timing_and_bench(m)
}

/// An error on `line` of the manifest, or on none where no line says it.
fn error_on(m: &LoadedManifest, line: Option<usize>, message: impl Into<String>) -> ManifestError {
    ManifestError {
        path: m.path.clone(),
        line,
        message: message.into(),
    }
}

/// The format is one this grader reads, and `kind` comes with format 2.
fn check_format(m: &LoadedManifest) -> Result<(), ManifestError> {
    let man = &m.manifest;
    let format = *man.format.get_ref();
    if !(OLDEST_FORMAT..=FORMAT_VERSION).contains(&format) {
        return Err(m.error_at(
            man.format.span(),
            format!("format {format} is not supported (this grader reads formats {OLDEST_FORMAT} to {FORMAT_VERSION})"),
        ));
    }
    if let Some(kind) = man.kind.as_ref().filter(|_| format < 2) {
        return Err(m.error_at(
            kind.span(),
            "`kind` needs `format = 2` (format 1 manifests are bug exercises)",
        ));
    }
    Ok(())
}

/// The exercise's folder, its source file and its reference are names the grader can use.
fn check_names(m: &LoadedManifest) -> Result<(), ManifestError> {
    let man = &m.manifest;
    if !is_valid_id(&m.id) {
        return Err(error_on(
            m,
            None,
            format!("exercise folder `{}` must be named NN-name (two digits, a dash, lowercase letters)", m.id),
        ));
    }
    if !man.source.get_ref().ends_with(".cu") || man.source.get_ref().contains('/') {
        return Err(m.error_at(
            man.source.span(),
            "source must be a bare file name ending in .cu",
        ));
    }
    if reference::lookup(man.reference.get_ref()).is_none() {
        return Err(m.error_at(
            man.reference.span(),
            format!(
                "unknown reference `{}`; known: {}",
                man.reference.get_ref(),
                reference::names().join(", ")
            ),
        ));
    }
    Ok(())
}

/// At least five cases, one of them run under the sanitizers, each with the bench's parameters.
fn check_cases(m: &LoadedManifest) -> Result<(), ManifestError> {
    let man = &m.manifest;
    if man.cases.len() < 5 {
        return Err(error_on(
            m,
            None,
            format!("needs at least 5 [[case]] entries, has {}", man.cases.len()),
        ));
    }
    if !man.cases.iter().any(|c| c.sanitize) {
        return Err(error_on(
            m,
            None,
            "at least one [[case]] must have `sanitize = true`",
        ));
    }
    let params: Vec<&String> = man.bench.params.keys().collect();
    for case in &man.cases {
        let names: Vec<&String> = case.params.keys().collect();
        if names != params {
            return Err(error_on(
                m,
                find_line(&m.text, &format!("\"{}\"", case.name)),
                format!(
                    "case `{}` has params {names:?}, but [bench] has {params:?}",
                    case.name
                ),
            ));
        }
    }
    Ok(())
}

/// The buffers must be the reference's own: names, dtypes and lengths.
fn check_buffers(m: &LoadedManifest) -> Result<(), ManifestError> {
    let man = &m.manifest;
    let signature =
        reference::signature(man.reference.get_ref()).expect("every reference has a signature");
    let norm = |e: &str| e.split_whitespace().collect::<String>();
    for (label, declared, expected) in [
        ("input", &man.inputs, signature.inputs),
        ("output", &man.outputs, signature.outputs),
    ] {
        let got: Vec<(String, DType, String)> = declared
            .iter()
            .map(|b| (b.name.clone(), b.dtype, norm(b.len.get_ref())))
            .collect();
        let want: Vec<(String, DType, String)> = expected
            .iter()
            .map(|(n, d, l)| (n.to_string(), *d, norm(l)))
            .collect();
        if got != want {
            let show = |v: &[(String, DType, String)]| {
                v.iter()
                    .map(|(n, d, l)| format!("{n}: {d:?}[{l}]"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let at = declared
                .first()
                .map(|b| b.len.span())
                .unwrap_or(man.reference.span());
            return Err(m.error_at(
                at,
                format!(
                    "reference `{}` takes {label}s [{}], the manifest declares [{}]",
                    man.reference.get_ref(),
                    show(&want),
                    show(&got)
                ),
            ));
        }
    }
    Ok(())
}

/// Every case (and the bench) must give every buffer a length that can be allocated.
fn check_params(m: &LoadedManifest) -> Result<(), ManifestError> {
    let man = &m.manifest;
    let all_params = man
        .cases
        .iter()
        .map(|c| (c.name.as_str(), &c.params))
        .chain([("bench", &man.bench.params)]);
    for (case, params) in all_params {
        let line =
            find_line(&m.text, &format!("\"{case}\"")).or_else(|| find_line(&m.text, "[bench]"));
        check_case_params(m, case, params, line)?;
    }
    Ok(())
}

/// One case's parameters (or the bench's, `case` "bench"), whose errors point at `line`: each in
/// range, within the reference's loop limits, and giving every buffer a length it can have.
fn check_case_params(
    m: &LoadedManifest,
    case: &str,
    params: &BTreeMap<String, i64>,
    line: Option<usize>,
) -> Result<(), ManifestError> {
    let man = &m.manifest;
    if let Some((name, v)) = params.iter().find(|(_, v)| **v < 0 || **v > MAX_PARAM) {
        return Err(error_on(
            m,
            line,
            format!("case `{case}`: parameter `{name}` = {v} is outside 0..={MAX_PARAM}"),
        ));
    }
    // A parameter the reference loops over, which no buffer's length bounds, has the
    // reference's own limit: past it, computing the expected outputs would take hours.
    for (name, v) in params {
        if let Some(limit) = reference::loop_limit(man.reference.get_ref(), name) {
            if *v > limit {
                return Err(error_on(
                    m,
                    line,
                    format!(
                        "case `{case}`: parameter `{name}` = {v} is more than {limit}, the most times the reference `{}` repeats its step",
                        man.reference.get_ref()
                    ),
                ));
            }
        }
    }
    for spec in man.inputs.iter().chain(&man.outputs) {
        match eval_len(spec.len.get_ref(), params) {
            Err(msg) => return Err(m.error_at(spec.len.span(), format!("case `{case}`, buffer `{}`: {msg}", spec.name))),
            Ok(len) if len > MAX_ELEMENTS => {
                return Err(error_on(
                    m,
                    line,
                    format!("case `{case}`: buffer `{}` would hold {len} elements, more than {MAX_ELEMENTS}", spec.name),
                ))
            }
            Ok(_) => {}
        }
    }
    Ok(())
}

/// Every input says how it is drawn, in a way its dtype can hold.
fn check_dists(m: &LoadedManifest) -> Result<(), ManifestError> {
    for input in &m.manifest.inputs {
        if let Err(why) = dist_fits(input.dtype, input.dist) {
            return Err(m.error_at(input.len.span(), format!("input `{}`: {why}", input.name)));
        }
    }
    Ok(())
}

/// Why an input's `dist` cannot draw values of its dtype; shown after the input's name.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum DistMismatch {
    #[error("needs a `dist`")]
    Missing,
    #[error("uniform needs finite lo < hi within f32, got [{lo}, {hi})")]
    BadUniform { lo: f64, hi: f64 },
    #[error("integers [{lo}, {hi}] do not fit {dtype:?} (lo <= hi, within the type)")]
    IntegersOutOfRange { dtype: DType, lo: i64, hi: i64 },
    #[error("dist kind does not fit dtype {dtype:?}")]
    WrongKind { dtype: DType },
}

/// Whether `dist` draws values of `dtype`: floats within f32, integers within the type.
fn dist_fits(dtype: DType, dist: Option<Dist>) -> Result<(), DistMismatch> {
    match (dtype, dist) {
        (_, None) => Err(DistMismatch::Missing),
        (d, Some(Dist::Uniform { lo, hi })) if d.is_float() => {
            if lo.is_finite()
                && hi.is_finite()
                && lo < hi
                && lo.abs() <= f32::MAX as f64
                && hi.abs() <= f32::MAX as f64
            {
                Ok(())
            } else {
                Err(DistMismatch::BadUniform { lo, hi })
            }
        }
        (DType::I32, Some(Dist::Integers { lo, hi }))
            if lo <= hi && lo >= i32::MIN as i64 && hi <= i32::MAX as i64 =>
        {
            Ok(())
        }
        (DType::U32, Some(Dist::Integers { lo, hi }))
            if lo <= hi && lo >= 0 && hi <= u32::MAX as i64 =>
        {
            Ok(())
        }
        (d, Some(Dist::Integers { lo, hi })) if !d.is_float() => {
            Err(DistMismatch::IntegersOutOfRange { dtype: d, lo, hi })
        }
        (d, _) => Err(DistMismatch::WrongKind { dtype: d }),
    }
}

/// The level is on the path, `requires` is a compute capability, and code built for one
/// architecture names it.
fn check_level_and_build(m: &LoadedManifest) -> Result<(), ManifestError> {
    let man = &m.manifest;
    if let Some(level) = &man.level {
        if !(1..=3).contains(level.get_ref()) {
            return Err(m.error_at(
                level.span(),
                format!(
                    "level = {}: 1 (first steps), 2 (practice) or 3 (deeper)",
                    level.get_ref()
                ),
            ));
        }
    }
    if let Some(req) = &man.requires {
        if Capability::parse(req.get_ref()).is_none() {
            return Err(m.error_at(req.span(), format!("requires = \"{}\": write a compute capability as \"major.minor\", e.g. \"9.0\" for Hopper", req.get_ref())));
        }
    }
    if let Some(headers) = &man.headers {
        if let Some(h) = headers
            .get_ref()
            .iter()
            .find(|h| !super::REGION_HEADERS.contains(&h.as_str()))
        {
            return Err(m.error_at(
                headers.span(),
                format!(
                    "headers: `{h}` is not a header a region may include (one of: {})",
                    super::REGION_HEADERS.join(", ")
                ),
            ));
        }
    }
    if man.build.arch_specific && man.requires.is_none() {
        return Err(error_on(
            m,
            find_line(&m.text, "arch_specific"),
            "[build] arch_specific = true builds for this GPU's architecture only (sm_90a runs on Hopper alone): name it with requires = \"9.0\"",
        ));
    }
    Ok(())
}

/// Three hints, a kernel to time, a ratio that allows the reference's own time, and a bench that
/// calls the entry point at least once.
fn check_hints_timing_and_bench(m: &LoadedManifest) -> Result<(), ManifestError> {
    let man = &m.manifest;
    if man.hints.get_ref().len() < 3 {
        return Err(m.error_at(man.hints.span(), "give three progressive hints"));
    }
    if man.timing.kernels.is_empty() {
        return Err(error_on(
            m,
            find_line(&m.text, "[timing]"),
            "timing.kernels must name at least one kernel",
        ));
    }
    if let Some(ratio) = man
        .timing
        .max_ratio_to_reference
        .as_ref()
        .filter(|r| *r.get_ref() < 1.0)
    {
        return Err(m.error_at(ratio.span(), "max_ratio_to_reference must be >= 1.0"));
    }
    if man.bench.repeat == 0 {
        return Err(error_on(
            m,
            find_line(&m.text, "repeat"),
            "bench.repeat must be at least 1",
        ));
    }
    Ok(())
}

/// What each detector needs and forbids in `[expect]`.
fn validate_expect(m: &LoadedManifest, expect: &Expect) -> Result<(), ManifestError> {
    let expect_line = find_line(&m.text, "[expect]");
    let err = |message: String| ManifestError {
        path: m.path.clone(),
        line: expect_line,
        message,
    };
    let detector = match expect.detector {
        Detector::Sanitizer => "sanitizer",
        Detector::WrongOutput => "wrong-output",
        Detector::Hang => "hang",
        Detector::Crash => "crash",
        Detector::Speed => return Err(err("`detector = \"speed\"` is not written: a performance exercise says `kind = \"perf\"` and has `[perf]`, not `[expect]`".into())),
    };
    match (expect.detector, expect.tool, expect.kind) {
        (Detector::Sanitizer, Some(_), Some(_)) | (Detector::Hang, _, _) if expect.tool.is_some() == expect.kind.is_some() => {}
        (Detector::WrongOutput | Detector::Crash, None, None) => {}
        (Detector::Sanitizer, _, _) => return Err(err("[expect] needs `tool` and `kind` (or `detector = \"wrong-output\"` where no tool sees the bug)".into())),
        (Detector::Hang, _, _) => return Err(err("[expect] with `detector = \"hang\"` names both `tool` and `kind` (the tool's deadlock report) or neither".into())),
        (_, _, _) => return Err(err(format!("[expect] with `detector = \"{detector}\"` names no `tool` or `kind`: no tool is claimed to catch it"))),
    }
    if let (Some(tool), Some(kind)) = (expect.tool, expect.kind) {
        if kind.tool().is_some_and(|t| t != tool) {
            let at = find_line(&m.text, &format!("\"{}\"", kind.name())).or(expect_line);
            return Err(ManifestError {
                path: m.path.clone(),
                line: at,
                message: format!(
                    "kind `{kind}` is a record of {}, not of {tool}",
                    kind.tool().expect("checked")
                ),
            });
        }
    }
    if let Some(options) = &expect.options {
        let Some(tool) = expect.tool else {
            return Err(m.error_at(
                options.span(),
                format!(
                    "`options` are a tool's: detector `{detector}` names no `tool` to pass them to"
                ),
            ));
        };
        check_options(tool, options.get_ref())
            .map_err(|why| m.error_at(options.span(), why.to_string()))?;
    }
    if let Some(t) = &expect.timeout_s {
        if expect.detector != Detector::Hang {
            return Err(m.error_at(t.span(), "`timeout_s` is the limit of a hang (`detector = \"hang\"`); other runs have the grader's own limits"));
        }
        if !(t.get_ref().is_finite() && (0.5..=60.0).contains(t.get_ref())) {
            return Err(m.error_at(
                t.span(),
                format!(
                    "timeout_s = {} must lie between 0.5 and 60 seconds",
                    t.get_ref()
                ),
            ));
        }
    }
    Ok(())
}

/// What each track needs and forbids: a bug has `[expect]` and `timing.max_ratio_to_reference`; a
/// performance exercise has `[perf]` instead, with metrics the grader knows and goals that say which
/// way they must move.
fn validate_track(m: &LoadedManifest) -> Result<(), ManifestError> {
    match m.manifest.track() {
        Track::Bug => validate_bug(m),
        Track::Perf => validate_perf(m),
    }
}

fn validate_bug(m: &LoadedManifest) -> Result<(), ManifestError> {
    let man = &m.manifest;
    let at = |needle: &str| find_line(&m.text, needle);
    if man.expect.is_none() {
        return Err(error_on(m, None, "a bug exercise needs [expect]: which tool finds the bug, or `detector = \"wrong-output\"`"));
    }
    if man.perf.is_some() {
        return Err(error_on(m, at("[perf]"), "[perf] belongs to performance exercises: add `kind = \"perf\"` (format 2), or remove it"));
    }
    if man.timing.max_ratio_to_reference.is_none() {
        return Err(error_on(m, at("[timing]"), "a bug exercise needs `timing.max_ratio_to_reference` (how much slower than the reference fix a fix may be)"));
    }
    Ok(())
}

fn validate_perf(m: &LoadedManifest) -> Result<(), ManifestError> {
    let man = &m.manifest;
    if man.expect.is_some() {
        return Err(error_on(m, find_line(&m.text, "[expect]"), "a performance exercise has no bug to expect: remove [expect] (its original must be clean and correct)"));
    }
    if let Some(ratio) = &man.timing.max_ratio_to_reference {
        return Err(m.error_at(
            ratio.span(),
            "a performance exercise is judged by `[perf] speedup`, not max_ratio_to_reference",
        ));
    }
    let Some(perf) = &man.perf else {
        return Err(error_on(
            m,
            None,
            "a performance exercise (`kind = \"perf\"`) needs [perf]: region, speedup, metrics",
        ));
    };
    if !(*perf.speedup.get_ref() > 1.0 && perf.speedup.get_ref().is_finite()) {
        return Err(m.error_at(perf.speedup.span(), "speedup must be a number above 1.0 (how many times faster than the original the fix must be)"));
    }
    check_metrics(m, perf)?;
    check_goals(m, perf)?;
    check_clock_and_baseline(m, perf)
}

/// Three to five metrics, with the baseline that the metrics comparing with one need.
fn check_metrics(m: &LoadedManifest, perf: &Perf) -> Result<(), ManifestError> {
    let shown = perf.metrics.get_ref();
    if !(3..=5).contains(&shown.len()) {
        return Err(m.error_at(
            perf.metrics.span(),
            format!(
                "name 3 to 5 metrics that explain this exercise, not {}",
                shown.len()
            ),
        ));
    }
    if let Some(needs) = shown
        .iter()
        .find(|k| k.needs_baseline())
        .filter(|_| perf.baseline.is_none())
    {
        return Err(m.error_at(
            perf.metrics.span(),
            format!(
                "metric `{}` compares with a library kernel: set `baseline`",
                needs.key()
            ),
        ));
    }
    Ok(())
}

/// Each goal has one finite bound and judges a metric the learner is shown.
fn check_goals(m: &LoadedManifest, perf: &Perf) -> Result<(), ManifestError> {
    for goal in &perf.goals {
        let line = find_line(&m.text, &format!("\"{}\"", goal.metric.key()));
        match (goal.at_least, goal.at_most) {
            (Some(v), None) | (None, Some(v)) if v.is_finite() => {}
            _ => {
                return Err(error_on(
                    m,
                    line,
                    format!(
                        "goal for `{}`: give exactly one finite bound, `at_least` or `at_most`",
                        goal.metric.key()
                    ),
                ))
            }
        }
        if !perf.metrics.get_ref().contains(&goal.metric) {
            return Err(error_on(m, line, format!("goal for `{}`: add the metric to `metrics`, so the learner sees what is judged", goal.metric.key())));
        }
    }
    Ok(())
}

/// What the call clock, the metrics read from the call's timeline and the cuBLAS baseline need.
fn check_clock_and_baseline(m: &LoadedManifest, perf: &Perf) -> Result<(), ManifestError> {
    let man = &m.manifest;
    if perf.clock == Clock::Call && man.bench.repeat < 2 {
        return Err(error_on(m, find_line(&m.text, "repeat"), "`clock = \"call\"` judges the fastest call after the first (which loads the kernels): set bench.repeat to 2 or more"));
    }
    if let Some(timeline) = perf
        .metrics
        .get_ref()
        .iter()
        .find(|k| k.from_timeline())
        .filter(|_| perf.clock != Clock::Call)
    {
        return Err(m.error_at(
            perf.metrics.span(),
            format!(
                "metric `{}` is read from the call's timeline: set `clock = \"call\"`",
                timeline.key()
            ),
        ));
    }
    if perf.baseline == Some(Baseline::CublasSgemm) {
        if let Some(missing) = ["m", "n", "k"]
            .iter()
            .find(|p| !man.bench.params.contains_key(**p))
        {
            return Err(error_on(m, find_line(&m.text, "[bench]"), format!("baseline cublas-sgemm takes the bench's `m`, `n` and `k`: `{missing}` is missing")));
        }
    }
    Ok(())
}

/// Checks that need the exercise's sources: the marked regions exist and parse.
pub fn validate_sources(
    m: &LoadedManifest,
    exercise: &str,
    solution: &str,
) -> Result<(), ManifestError> {
    let expect_region = m.region().get_ref();
    for (label, text) in [("exercise", exercise), ("solution", solution)] {
        let regions = regions::parse(text).map_err(|e| ManifestError {
            path: PathBuf::from(format!("{}/{}", label_dir(label, &m.id), m.source_name())),
            line: Some(e.line),
            message: e.message,
        })?;
        if !regions.iter().any(|r| &r.name == expect_region) {
            return Err(m.error_at(
                m.region().span(),
                format!("the {label} source has no region `{expect_region}` (mark it with `// ANCHOR: {expect_region}` ... `// ANCHOR_END: {expect_region}`)"),
            ));
        }
    }
    Ok(())
}

fn label_dir(label: &str, id: &str) -> String {
    match label {
        "exercise" => format!("exercises/{id}"),
        _ => format!("solutions/{id}"),
    }
}

pub fn is_valid_id(id: &str) -> bool {
    let b = id.as_bytes();
    b.len() > 3
        && b[0].is_ascii_digit()
        && b[1].is_ascii_digit()
        && b[2] == b'-'
        && id[3..]
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
}

/// Why a length expression has no length; callers put the buffer (and case) before it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LenError {
    #[error("unknown parameter `{factor}` in length `{expr}`")]
    UnknownParameter { factor: String, expr: String },
    #[error("length `{expr}` overflows")]
    Overflows { expr: String },
    #[error("length `{expr}` is negative")]
    Negative { expr: String },
}

/// Evaluate a length expression: a `*`-separated product of integers and parameter names.
pub fn eval_len(expr: &str, params: &BTreeMap<String, i64>) -> Result<usize, LenError> {
    let mut product: i64 = 1;
    for factor in expr.split('*').map(str::trim) {
        let value = if let Ok(v) = factor.parse::<i64>() {
            v
        } else if let Some(v) = params.get(factor) {
            *v
        } else {
            return Err(LenError::UnknownParameter {
                factor: factor.to_string(),
                expr: expr.to_string(),
            });
        };
        product = product
            .checked_mul(value)
            .ok_or_else(|| LenError::Overflows {
                expr: expr.to_string(),
            })?;
    }
    usize::try_from(product).map_err(|_| LenError::Negative {
        expr: expr.to_string(),
    })
}
