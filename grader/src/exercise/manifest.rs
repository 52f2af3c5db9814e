//! `exercise.toml`: the typed manifest of one exercise, parsed with serde + toml and validated so that
//! every error names the file and the line.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

pub use crate::exercise::dtype::DType;
use crate::exercise::reference;
use crate::exercise::regions;

/// The manifest format this grader reads. Bump it when a field changes meaning.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format: Spanned<u32>,
    pub title: String,
    pub bug_class: String,
    /// The `.cu` file name, the same in `exercises/<id>/` and `solutions/<id>/`.
    pub source: Spanned<String>,
    /// Book chapter (path inside `book/src`).
    pub chapter: String,
    /// The Rust reference that computes the expected outputs (see `reference.rs`).
    pub reference: Spanned<String>,
    pub expect: Expect,
    pub inputs: Vec<BufferSpec>,
    pub outputs: Vec<BufferSpec>,
    #[serde(rename = "case")]
    pub cases: Vec<Case>,
    pub bench: Bench,
    pub tolerance: Tolerance,
    pub timing: Timing,
    pub hints: Spanned<Vec<String>>,
    /// Plain-words explanation of the finding, shown under the tool's record.
    pub explain: Explain,
}

/// What shows that the untouched exercise has its bug: a sanitizer record of a given kind in a
/// marked region, or, for the classes no sanitizer sees on today's GPUs, wrong outputs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub detector: Detector,
    /// The tool that reports the bug (detector "sanitizer" only).
    pub tool: Option<Tool>,
    /// The kind of record it writes (detector "sanitizer" only).
    pub kind: Option<FindingKind>,
    /// Name of the marked region the finding must point into; for "wrong-output", where the bug is.
    pub region: Spanned<String>,
}

impl Expect {
    /// The tool and the kind of record that must flag the untouched exercise; none where the cases
    /// are the detector. Validation guarantees both are set for detector "sanitizer".
    pub fn sanitizer(&self) -> Option<(Tool, FindingKind)> {
        match self.detector {
            Detector::Sanitizer => Some((self.tool.expect("validated manifest"), self.kind.expect("validated manifest"))),
            Detector::WrongOutput => None,
        }
    }
}

/// What catches an exercise's bug.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Detector {
    /// A compute-sanitizer tool (`tool`, `kind`).
    #[default]
    Sanitizer,
    /// No sanitizer flags this class on sm_90: the cases, run plainly, give wrong outputs.
    WrongOutput,
}


#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Explain {
    /// What this kind of record means.
    pub finding: String,
    /// Why a plain run looked right (or why it did not).
    pub silent: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tool {
    Memcheck,
    Racecheck,
    Initcheck,
    Synccheck,
}

impl Tool {
    pub const ALL: [Tool; 4] = [Tool::Memcheck, Tool::Racecheck, Tool::Initcheck, Tool::Synccheck];
    pub fn name(self) -> &'static str {
        match self {
            Tool::Memcheck => "memcheck",
            Tool::Racecheck => "racecheck",
            Tool::Initcheck => "initcheck",
            Tool::Synccheck => "synccheck",
        }
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The kinds of record the grader tells apart (see `sanitizer.rs` for how records map to them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// memcheck: an access outside any allocation.
    OutOfBounds,
    /// memcheck: a misaligned access.
    Misaligned,
    /// memcheck --leak-check full: device memory never freed.
    Leak,
    /// memcheck: a CUDA API call returned an error.
    ApiError,
    /// racecheck: a shared-memory hazard between threads.
    SharedRace,
    /// initcheck: a device read of memory nothing wrote.
    UninitializedRead,
    /// initcheck: a host API (cudaMemcpy) copied memory nothing wrote.
    UninitializedCopy,
    /// synccheck: threads of one block wait at different barriers.
    DivergentBarrier,
    /// synccheck: a barrier with invalid arguments (e.g. a __syncwarp mask).
    InvalidBarrier,
    /// memcheck: the hardware raised an exception in a kernel (e.g. an illegal instruction).
    DeviceException,
    /// Any other record.
    Other,
}

impl FindingKind {
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::OutOfBounds => "out-of-bounds",
            FindingKind::Misaligned => "misaligned",
            FindingKind::Leak => "leak",
            FindingKind::ApiError => "api-error",
            FindingKind::SharedRace => "shared-race",
            FindingKind::UninitializedRead => "uninitialized-read",
            FindingKind::UninitializedCopy => "uninitialized-copy",
            FindingKind::DivergentBarrier => "divergent-barrier",
            FindingKind::InvalidBarrier => "invalid-barrier",
            FindingKind::DeviceException => "device-exception",
            FindingKind::Other => "other",
        }
    }
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BufferSpec {
    pub name: String,
    pub dtype: DType,
    /// Element count: a product of parameter names and integers, e.g. `"rows * cols"`.
    pub len: Spanned<String>,
    /// How inputs are drawn (inputs only).
    #[serde(default)]
    pub dist: Option<Dist>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Dist {
    /// Floats uniform in [lo, hi).
    Uniform { lo: f64, hi: f64 },
    /// Integers uniform in [lo, hi].
    Integers { lo: i64, hi: i64 },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    pub seed: u64,
    pub params: BTreeMap<String, i64>,
    /// Also run this case under the sanitizers (keep these small: the tools are slow).
    #[serde(default)]
    pub sanitize: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bench {
    pub seed: u64,
    pub params: BTreeMap<String, i64>,
    /// How many times the harness calls the entry point under ncu.
    pub repeat: u32,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    pub atol: f64,
    pub rtol: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    /// Kernel function names whose ncu times are summed.
    pub kernels: Vec<String>,
    /// The learner's time may be at most this multiple of the reference fix's time.
    pub max_ratio_to_reference: Spanned<f64>,
}

/// A manifest error that names the file and (where known) the line.
#[derive(Debug, Clone, thiserror::Error)]
pub struct ManifestError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.path.display(), line, self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// A parsed manifest together with where it came from, so later errors can point back into it.
#[derive(Debug, Clone)]
pub struct LoadedManifest {
    pub id: String,
    pub path: PathBuf,
    pub text: String,
    pub manifest: Manifest,
}

impl LoadedManifest {
    /// Line (1-based) of a byte offset in the manifest text.
    pub fn line_of(&self, offset: usize) -> usize {
        line_of(&self.text, offset)
    }

    pub fn error_at(&self, span: std::ops::Range<usize>, message: impl Into<String>) -> ManifestError {
        ManifestError { path: self.path.clone(), line: Some(self.line_of(span.start)), message: message.into() }
    }

    pub fn source_name(&self) -> &str {
        self.manifest.source.get_ref()
    }

    pub fn all_cases(&self) -> impl Iterator<Item = (&str, u64, &BTreeMap<String, i64>)> {
        self.manifest.cases.iter().map(|c| (c.name.as_str(), c.seed, &c.params))
    }
}

pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// Parse one manifest's text. `id` is the exercise folder name.
pub fn parse(id: &str, path: &Path, text: &str) -> Result<LoadedManifest, ManifestError> {
    let manifest: Manifest = toml::from_str(text).map_err(|e| ManifestError {
        path: path.to_path_buf(),
        line: e.span().map(|s| line_of(text, s.start)),
        message: e.message().to_string(),
    })?;
    let loaded = LoadedManifest { id: id.to_string(), path: path.to_path_buf(), text: text.to_string(), manifest };
    validate_fields(&loaded)?;
    Ok(loaded)
}

/// The largest parameter value a case may give.
pub const MAX_PARAM: i64 = 1 << 31;
/// The most elements one buffer may hold (1 GiB of f32).
pub const MAX_ELEMENTS: usize = 1 << 28;

/// Checks a manifest can make on its own (no source files needed).
fn validate_fields(m: &LoadedManifest) -> Result<(), ManifestError> {
    let man = &m.manifest;
    if *man.format.get_ref() != FORMAT_VERSION {
        return Err(m.error_at(
            man.format.span(),
            format!("format {} is not supported (this grader reads format {FORMAT_VERSION})", man.format.get_ref()),
        ));
    }
    if !is_valid_id(&m.id) {
        return Err(ManifestError {
            path: m.path.clone(),
            line: None,
            message: format!("exercise folder `{}` must be named NN-name (two digits, a dash, lowercase letters)", m.id),
        });
    }
    if !man.source.get_ref().ends_with(".cu") || man.source.get_ref().contains('/') {
        return Err(m.error_at(man.source.span(), "source must be a bare file name ending in .cu"));
    }
    if reference::lookup(man.reference.get_ref()).is_none() {
        return Err(m.error_at(
            man.reference.span(),
            format!("unknown reference `{}`; known: {}", man.reference.get_ref(), reference::names().join(", ")),
        ));
    }
    if man.cases.len() < 5 {
        return Err(ManifestError {
            path: m.path.clone(),
            line: None,
            message: format!("needs at least 5 [[case]] entries, has {}", man.cases.len()),
        });
    }
    if !man.cases.iter().any(|c| c.sanitize) {
        return Err(ManifestError {
            path: m.path.clone(),
            line: None,
            message: "at least one [[case]] must have `sanitize = true`".into(),
        });
    }
    let params: Vec<&String> = man.bench.params.keys().collect();
    for case in &man.cases {
        let names: Vec<&String> = case.params.keys().collect();
        if names != params {
            return Err(ManifestError {
                path: m.path.clone(),
                line: find_line(&m.text, &format!("\"{}\"", case.name)),
                message: format!("case `{}` has params {names:?}, but [bench] has {params:?}", case.name),
            });
        }
    }
    // The buffers must be the reference's own: names, dtypes and lengths.
    let signature = reference::signature(man.reference.get_ref()).expect("every reference has a signature");
    let norm = |e: &str| e.split_whitespace().collect::<String>();
    for (label, declared, expected) in [("input", &man.inputs, signature.inputs), ("output", &man.outputs, signature.outputs)] {
        let got: Vec<(String, DType, String)> = declared.iter().map(|b| (b.name.clone(), b.dtype, norm(b.len.get_ref()))).collect();
        let want: Vec<(String, DType, String)> = expected.iter().map(|(n, d, l)| (n.to_string(), *d, norm(l))).collect();
        if got != want {
            let show = |v: &[(String, DType, String)]| v.iter().map(|(n, d, l)| format!("{n}: {d:?}[{l}]")).collect::<Vec<_>>().join(", ");
            let at = declared.first().map(|b| b.len.span()).unwrap_or(man.reference.span());
            return Err(m.error_at(at, format!("reference `{}` takes {label}s [{}], the manifest declares [{}]", man.reference.get_ref(), show(&want), show(&got))));
        }
    }
    // Every case (and the bench) must give every buffer a length that can be allocated.
    let all_params = man.cases.iter().map(|c| (c.name.as_str(), &c.params)).chain([("bench", &man.bench.params)]);
    for (case, params) in all_params {
        let line = find_line(&m.text, &format!("\"{case}\"")).or_else(|| find_line(&m.text, "[bench]"));
        if let Some((name, v)) = params.iter().find(|(_, v)| **v < 0 || **v > MAX_PARAM) {
            return Err(ManifestError { path: m.path.clone(), line, message: format!("case `{case}`: parameter `{name}` = {v} is outside 0..={MAX_PARAM}") });
        }
        for spec in man.inputs.iter().chain(&man.outputs) {
            match eval_len(spec.len.get_ref(), params) {
                Err(msg) => return Err(m.error_at(spec.len.span(), format!("case `{case}`, buffer `{}`: {msg}", spec.name))),
                Ok(len) if len > MAX_ELEMENTS => {
                    return Err(ManifestError {
                        path: m.path.clone(),
                        line,
                        message: format!("case `{case}`: buffer `{}` would hold {len} elements, more than {MAX_ELEMENTS}", spec.name),
                    })
                }
                Ok(_) => {}
            }
        }
    }
    for input in &man.inputs {
        let fits = match (input.dtype, input.dist) {
            (_, None) => Err("needs a `dist`".to_string()),
            (d, Some(Dist::Uniform { lo, hi })) if d.is_float() => {
                if lo.is_finite() && hi.is_finite() && lo < hi && lo.abs() <= f32::MAX as f64 && hi.abs() <= f32::MAX as f64 {
                    Ok(())
                } else {
                    Err(format!("uniform needs finite lo < hi within f32, got [{lo}, {hi})"))
                }
            }
            (DType::I32, Some(Dist::Integers { lo, hi })) if lo <= hi && lo >= i32::MIN as i64 && hi <= i32::MAX as i64 => Ok(()),
            (DType::U32, Some(Dist::Integers { lo, hi })) if lo <= hi && lo >= 0 && hi <= u32::MAX as i64 => Ok(()),
            (d, Some(Dist::Integers { lo, hi })) if !d.is_float() => Err(format!("integers [{lo}, {hi}] do not fit {d:?} (lo <= hi, within the type)")),
            (d, _) => Err(format!("dist kind does not fit dtype {d:?}")),
        };
        if let Err(why) = fits {
            return Err(m.error_at(input.len.span(), format!("input `{}`: {why}", input.name)));
        }
    }
    let expect = &man.expect;
    let expect_line = find_line(&m.text, "[expect]");
    match (expect.detector, expect.tool, expect.kind) {
        (Detector::Sanitizer, Some(_), Some(_)) | (Detector::WrongOutput, None, None) => {}
        (Detector::Sanitizer, _, _) => {
            return Err(ManifestError { path: m.path.clone(), line: expect_line, message: "[expect] needs `tool` and `kind` (or `detector = \"wrong-output\"` where no tool sees the bug)".into() })
        }
        (Detector::WrongOutput, _, _) => {
            return Err(ManifestError {
                path: m.path.clone(),
                line: expect_line,
                message: "[expect] with `detector = \"wrong-output\"` names no `tool` or `kind`: no tool is claimed to catch it".into(),
            })
        }
    }
    if man.hints.get_ref().len() < 3 {
        return Err(m.error_at(man.hints.span(), "give three progressive hints"));
    }
    if man.timing.kernels.is_empty() {
        return Err(ManifestError {
            path: m.path.clone(),
            line: find_line(&m.text, "[timing]"),
            message: "timing.kernels must name at least one kernel".into(),
        });
    }
    if *man.timing.max_ratio_to_reference.get_ref() < 1.0 {
        return Err(m.error_at(man.timing.max_ratio_to_reference.span(), "max_ratio_to_reference must be >= 1.0"));
    }
    if man.bench.repeat == 0 {
        return Err(ManifestError {
            path: m.path.clone(),
            line: find_line(&m.text, "repeat"),
            message: "bench.repeat must be at least 1".into(),
        });
    }
    Ok(())
}

/// Checks that need the exercise's sources: the marked regions exist and parse.
pub fn validate_sources(m: &LoadedManifest, exercise: &str, solution: &str) -> Result<(), ManifestError> {
    let expect_region = m.manifest.expect.region.get_ref();
    for (label, text) in [("exercise", exercise), ("solution", solution)] {
        let regions = regions::parse(text).map_err(|e| ManifestError {
            path: PathBuf::from(format!("{}/{}", label_dir(label, &m.id), m.source_name())),
            line: Some(e.line),
            message: e.message,
        })?;
        if !regions.iter().any(|r| &r.name == expect_region) {
            return Err(m.error_at(
                m.manifest.expect.region.span(),
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

fn find_line(text: &str, needle: &str) -> Option<usize> {
    text.find(needle).map(|off| line_of(text, off))
}

pub fn is_valid_id(id: &str) -> bool {
    let b = id.as_bytes();
    b.len() > 3
        && b[0].is_ascii_digit()
        && b[1].is_ascii_digit()
        && b[2] == b'-'
        && id[3..].bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
}

/// Evaluate a length expression: a `*`-separated product of integers and parameter names.
pub fn eval_len(expr: &str, params: &BTreeMap<String, i64>) -> Result<usize, String> {
    let mut product: i64 = 1;
    for factor in expr.split('*').map(str::trim) {
        let value = if let Ok(v) = factor.parse::<i64>() {
            v
        } else if let Some(v) = params.get(factor) {
            *v
        } else {
            return Err(format!("unknown parameter `{factor}` in length `{expr}`"));
        };
        product = product.checked_mul(value).ok_or_else(|| format!("length `{expr}` overflows"))?;
    }
    usize::try_from(product).map_err(|_| format!("length `{expr}` is negative"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RACE: &str = include_str!("../../../exercises/15-global-race/exercise.toml");
    const LEAK: &str = include_str!("../../../exercises/07-leak/exercise.toml");

    fn parsed(id: &str, text: &str) -> Result<LoadedManifest, ManifestError> {
        parse(id, Path::new("exercise.toml"), text)
    }

    #[test]
    fn a_bug_no_tool_sees_names_the_cases_and_no_tool() {
        let m = parsed("15-global-race", RACE).unwrap();
        assert_eq!((m.manifest.expect.detector, m.manifest.expect.sanitizer()), (Detector::WrongOutput, None));
        // Claiming a tool for it is refused, at the [expect] line.
        let claimed = RACE.replace("detector = \"wrong-output\"", "detector = \"wrong-output\"\ntool = \"racecheck\"");
        let e = parsed("15-global-race", &claimed).unwrap_err();
        assert!(e.message.contains("names no `tool` or `kind`") && e.line == find_line(&claimed, "[expect]"), "{e}");
    }

    #[test]
    fn a_sanitizer_detector_needs_its_tool_and_kind() {
        let m = parsed("07-leak", LEAK).unwrap();
        assert_eq!(m.manifest.expect.sanitizer(), Some((Tool::Memcheck, FindingKind::Leak)));
        let e = parsed("07-leak", &LEAK.replace("kind = \"leak\"\n", "")).unwrap_err();
        assert!(e.message.contains("needs `tool` and `kind`"), "{e}");
    }
}
