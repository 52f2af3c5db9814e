//! The record of the other fixes and half-fixes (`book/fixes-*.json`, made by
//! `scripts/fix-record.py` from the reports of `scripts/gpu-bug-fixes.sh`): each version of
//! `scripts/alt-fixes/` spliced into its exercise and checked on a GPU as a learner's file. A
//! lesson's table of other fixes reads its figures from it (`{{#cudabugs-value FILE:VERSION ...}}`),
//! so that the table cannot drift from the run it cites.

use anyhow::{Context as _, Result};
use grader::exercise::metric::Metric;
use grader::judge::perf::PerfSummary;
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FixRecord {
    /// The GPU's name, as the checks reported it.
    pub gpu: String,
    /// The folders and archives under `book/gpu-runs/` that hold the reports it was made from.
    #[allow(dead_code)] // for the JSON's readers; the tests check that each exists
    pub source: Vec<String>,
    pub fixes: Vec<Fix>,
}

/// One version, as `check` judged it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Fix {
    #[allow(dead_code)] // for the JSON's readers; the tests check it
    pub exercise: String,
    /// The region file's name without `.region.cu`: `62-launches-half`.
    pub version: String,
    /// What the version is for: `pass` (another fix) or `fail` (a half-fix).
    #[allow(dead_code)] // the tests hold every outcome to it
    pub expect: String,
    /// Where its report is: a file, or a file inside an archive (`a.tgz/b.json`).
    pub report: String,
    /// `check`'s outcome: `pass` or `fail`.
    pub outcome: String,
    /// The steps that did not pass, by name.
    pub failed: Vec<String>,
    /// The timing: the original, the reference fix and this version (`learner`), in one run.
    pub perf: Option<PerfSummary>,
}

impl FixRecord {
    pub(crate) fn fix(&self, version: &str) -> Result<&Fix> {
        self.fixes
            .iter()
            .find(|f| f.version == version)
            .with_context(|| format!("the record of fixes has no `{version}`"))
    }
}

impl Fix {
    pub(crate) fn perf(&self) -> Result<&PerfSummary> {
        self.perf
            .as_ref()
            .with_context(|| format!("`{}` has no timing", self.version))
    }

    /// "pass", or "fail (" and what failed ")": `speed` where the speedup missed the target, a
    /// goal's metric by its label, any other step by its name.
    pub(crate) fn verdict(&self) -> Result<String> {
        if self.outcome == "pass" {
            return Ok("pass".into());
        }
        let mut why: Vec<String> = Vec::new();
        for step in &self.failed {
            let reason = match step.strip_prefix("timing: ") {
                Some(key) => Metric::ALL
                    .into_iter()
                    .find(|m| m.key() == key)
                    .map_or_else(|| key.to_string(), |m| m.label().to_string()),
                None if step == "timing" => {
                    let perf = self.perf()?;
                    let learner = perf.version("learner").context("no learner's version")?;
                    if learner.speedup >= perf.target_speedup {
                        continue; // only its goals missed, each a step of its own
                    }
                    "speed".into()
                }
                None => step.clone(),
            };
            if !why.contains(&reason) {
                why.push(reason);
            }
        }
        Ok(format!("fail ({})", why.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn records() -> Vec<(String, FixRecord)> {
        let book = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        ["fixes-h100.json", "fixes-h200.json"]
            .iter()
            .map(|name| {
                let text = std::fs::read_to_string(book.join(name)).unwrap();
                (name.to_string(), serde_json::from_str(&text).unwrap())
            })
            .collect()
    }

    /// Each version of the records is one of `scripts/alt-fixes/`, made from committed reports,
    /// and ended as it is meant to: another fix passes, a half-fix fails. A re-run that changes a
    /// verdict fails here before a table states the old one.
    #[test]
    fn every_recorded_version_exists_and_ends_as_meant() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for (name, record) in records() {
            assert!(record.gpu.starts_with("NVIDIA"), "{name}: {}", record.gpu);
            for source in &record.source {
                assert!(root.join(source).exists(), "{name}: no {source}");
            }
            assert!(!record.fixes.is_empty(), "{name}");
            for fix in &record.fixes {
                let region = format!("scripts/alt-fixes/{}.region.cu", fix.version);
                assert!(root.join(&region).exists(), "{name}: no {region}");
                assert!(fix.version.starts_with(&format!("{}-", fix.exercise)));
                assert_eq!(fix.outcome, fix.expect, "{name}: {}", fix.version);
                assert!(fix.perf().is_ok(), "{name}: {} has no timing", fix.version);
            }
        }
    }

    #[test]
    fn a_verdict_names_what_failed() {
        let (_, h100) = records().remove(0);
        let verdict = |v: &str| h100.fix(v).unwrap().verdict().unwrap();
        assert_eq!(verdict("62-launches-global-pingpong"), "pass");
        assert_eq!(
            verdict("62-launches-half"),
            "fail (speed; launches per call)"
        );
        // A report of an older grader, where the missed speed was a step of its own.
        assert_eq!(
            verdict("56-occupancy-half"),
            "fail (speed; achieved occupancy)"
        );
        assert!(h100.fix("62-launches-none").is_err());
    }
}
