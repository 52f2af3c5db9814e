//! The instructor's secret: a seed (`--secret-seed`, or `seed` in a file kept outside the
//! workbook) from which every exercise's hidden cases and the fresh inputs of the post-timing check
//! are drawn, and extra sizes per exercise. Students see neither the seed nor the hidden cases'
//! details, only how many of them passed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::exercise::cases::{self, Cases};
use crate::exercise::manifest::{self, Case};
use crate::exercise::workbook::Exercise;

/// An extra hidden case for one exercise, from the secret file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraCase {
    pub exercise: String,
    pub name: String,
    pub params: BTreeMap<String, i64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SecretFile {
    seed: u64,
    #[serde(default, rename = "case")]
    cases: Vec<ExtraCase>,
}

#[derive(Debug, Clone)]
pub struct Secret {
    seed: u64,
    extra: Vec<ExtraCase>,
    /// The file it came from (hidden from every sandboxed run), if any.
    pub file: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("{0}: {1}")]
    Read(PathBuf, std::io::Error),
    #[error("{path}:{line}: {message}")]
    Parse { path: PathBuf, line: usize, message: String },
    #[error("{0}: the secret file lies inside {1}, where students' code or repositories can read it; keep it outside")]
    Exposed(PathBuf, PathBuf),
}

/// A stable 64-bit mix (splitmix64), so that a seed names the same cases on every machine.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A stable 64-bit hash of several strings (the journal's fingerprints).
pub fn stable_hash(parts: &[&str]) -> u64 {
    derive(0x6375_6461_6275_6773, parts)
}

fn derive(seed: u64, parts: &[&str]) -> u64 {
    parts.iter().flat_map(|p| p.bytes().chain([0xff])).fold(mix(seed), |h, b| mix(h ^ b as u64))
}

impl Secret {
    pub fn from_seed(seed: u64) -> Secret {
        Secret { seed, extra: Vec::new(), file: None }
    }

    /// Read a secret file; refused where it lies inside one of `exposed` (the workbook, the
    /// submissions).
    pub fn load(path: &Path, exposed: &[&Path]) -> Result<Secret, SecretError> {
        let abs = path.canonicalize().map_err(|e| SecretError::Read(path.to_path_buf(), e))?;
        if let Some(inside) = exposed.iter().filter_map(|d| d.canonicalize().ok()).find(|d| abs.starts_with(d)) {
            return Err(SecretError::Exposed(path.to_path_buf(), inside));
        }
        let text = std::fs::read_to_string(&abs).map_err(|e| SecretError::Read(path.to_path_buf(), e))?;
        let parsed: SecretFile = toml::from_str(&text).map_err(|e| SecretError::Parse {
            path: path.to_path_buf(),
            line: e.span().map(|s| manifest::line_of(&text, s.start)).unwrap_or(1),
            message: e.message().to_string(),
        })?;
        Ok(Secret { seed: parsed.seed, extra: parsed.cases, file: Some(abs) })
    }

    /// Names the secret without revealing it: the journal keys results to it, so a new seed grades
    /// everything again.
    pub fn fingerprint(&self) -> String {
        let extra: Vec<String> = self.extra.iter().map(|c| format!("{}|{}|{:?}", c.exercise, c.name, c.params)).collect();
        format!("{:016x}", derive(self.seed, &[&extra.join(";"), "fingerprint"]))
    }

    /// The extra cases of the secret file that name an exercise this workbook does not have, or
    /// give it parameters it does not take.
    pub fn problems(&self, exercises: &[&Exercise]) -> Vec<String> {
        let mut out = Vec::new();
        for c in &self.extra {
            match exercises.iter().find(|e| e.id() == c.exercise) {
                None => out.push(format!("hidden case `{}` names exercise `{}`, which this workbook does not have", c.name, c.exercise)),
                Some(ex) => {
                    let want: Vec<&String> = ex.manifest.manifest.bench.params.keys().collect();
                    let got: Vec<&String> = c.params.keys().collect();
                    if want != got {
                        out.push(format!("hidden case `{}` of {}: params {got:?}, the exercise takes {want:?}", c.name, c.exercise));
                    } else if let Some(e) = ex.manifest.manifest.inputs.iter().chain(&ex.manifest.manifest.outputs).find_map(|b| {
                        manifest::eval_len(b.len.get_ref(), &c.params).ok().filter(|l| *l > manifest::MAX_ELEMENTS).map(|l| format!("buffer `{}` would hold {l} elements", b.name))
                    }) {
                        out.push(format!("hidden case `{}` of {}: {e}", c.name, c.exercise));
                    }
                }
            }
        }
        out
    }

    /// The hidden cases: every public case's sizes with a secret seed, then the file's extra sizes.
    pub fn hidden(&self, ex: &Exercise) -> Vec<Case> {
        let public = &ex.manifest.manifest.cases;
        let mut out: Vec<Case> = public
            .iter()
            .enumerate()
            .map(|(i, c)| Case { name: format!("hidden {}", i + 1), seed: derive(self.seed, &[ex.id(), "hidden", &i.to_string()]), params: c.params.clone(), sanitize: false })
            .collect();
        let valid: Vec<&String> = ex.manifest.manifest.bench.params.keys().collect();
        for (i, c) in self.extra.iter().filter(|c| c.exercise == ex.id() && c.params.keys().collect::<Vec<_>>() == valid).enumerate() {
            out.push(Case { name: format!("hidden {}", public.len() + i + 1), seed: derive(self.seed, &[ex.id(), "extra", &c.name]), params: c.params.clone(), sanitize: false });
        }
        out
    }

    /// Fresh inputs for the check after the timed runs: the public sizes, new data.
    pub fn fresh(&self, ex: &Exercise) -> Vec<Case> {
        ex.manifest
            .manifest
            .cases
            .iter()
            .enumerate()
            .map(|(i, c)| Case { name: format!("fresh {}", i + 1), seed: derive(self.seed, &[ex.id(), "fresh", &i.to_string()]), params: c.params.clone(), sanitize: false })
            .collect()
    }

    /// Write both sets' inputs under `dir` and compute their expected outputs.
    pub fn prepare(&self, ex: &Exercise, dir: &Path) -> std::io::Result<(Cases, Cases)> {
        let dir = dir.join(format!("secret-{}", self.fingerprint()));
        Ok((cases::prepare_list(ex, &dir, "hidden", &self.hidden(ex))?, cases::prepare_list(ex, &dir, "fresh", &self.fresh(ex))?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_cases_and_another_seed_others() {
        assert_eq!(derive(7, &["03-race", "hidden", "0"]), derive(7, &["03-race", "hidden", "0"]));
        assert_ne!(derive(7, &["03-race", "hidden", "0"]), derive(8, &["03-race", "hidden", "0"]));
        assert_ne!(derive(7, &["03-race", "hidden", "0"]), derive(7, &["03-race", "fresh", "0"]));
        assert_ne!(Secret::from_seed(7).fingerprint(), Secret::from_seed(8).fingerprint());
        assert!(!Secret::from_seed(7).fingerprint().contains('7') || Secret::from_seed(7).fingerprint().len() == 16);
    }
}
