//! `sanitize --format sarif`: SARIF 2.1.0, the format editors and code-scanning services read. One
//! run, one rule per (tool, kind) seen, one result per finding with its first location in the
//! user's code as `file:line:col` and the other accesses as related locations.

use std::path::Path;

use serde_json::{json, Value};

use crate::judge::verdict::{Finding, Outcome};
use crate::plans::sanitize::{MergedFinding, SanitizeReport, ToolStatus};
use crate::report::{first_column, shown_path, SourceTexts};

pub const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

fn location(
    path: &str,
    line: u32,
    cwd: &Path,
    text: Option<&str>,
    message: Option<String>,
) -> Value {
    let column = text.map(|t| first_column(t, line as usize)).unwrap_or(1);
    let mut loc = json!({
        "physicalLocation": {
            "artifactLocation": { "uri": shown_path(path, cwd).replace('\\', "/") },
            "region": { "startLine": line.max(1), "startColumn": column.max(1) }
        }
    });
    if let Some(m) = message {
        loc["message"] = json!({ "text": m });
    }
    loc
}

pub fn sarif(r: &SanitizeReport, cwd: &Path) -> Value {
    let mut rules: Vec<(String, Value)> = Vec::new();
    let mut texts = SourceTexts::default();
    let results: Vec<Value> = r
        .findings
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let rule_index = rule_index(&mut rules, m);
            result(i, m, rule_index, cwd, &mut texts)
        })
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "cudabugs sanitize",
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://docs.nvidia.com/compute-sanitizer/ComputeSanitizer/index.html",
                "rules": rules.into_iter().map(|(_, r)| r).collect::<Vec<_>>()
            }},
            "invocations": [{
                "executionSuccessful": !matches!(r.outcome, Outcome::ToolError { .. }),
                "commandLine": format!("cudabugs sanitize {}", r.program),
                "toolExecutionNotifications": notifications(r)
            }],
            "results": results
        }]
    })
}

/// "tool/kind" of a finding: its rule's id.
fn rule_id(f: &Finding) -> String {
    format!("{}/{}", f.tool, f.kind)
}

/// The index of the finding's rule in `rules`, the rule added where it is the first of its kind.
fn rule_index(rules: &mut Vec<(String, Value)>, m: &MergedFinding) -> usize {
    let f = &m.finding;
    let id = rule_id(f);
    if let Some(k) = rules.iter().position(|(r, _)| *r == id) {
        return k;
    }
    rules.push((
        id.clone(),
        json!({
            "id": id,
            "name": format!("{}-{}", f.tool, f.kind),
            "shortDescription": { "text": format!("{} {}", f.tool, f.kind) },
            "fullDescription": { "text": m.explanation },
            "helpUri": "https://docs.nvidia.com/compute-sanitizer/ComputeSanitizer/index.html"
        }),
    ));
    rules.len() - 1
}

/// One finding as a SARIF result: its first location, the others related, numbered from 1.
fn result(
    i: usize,
    m: &MergedFinding,
    rule_index: usize,
    cwd: &Path,
    texts: &mut SourceTexts,
) -> Value {
    let f = &m.finding;
    let mut locations = Vec::new();
    let mut related = Vec::new();
    for (k, l) in f.locations.iter().enumerate() {
        let t = texts.get(&l.path);
        let role = format!(
            "{}{}",
            l.role,
            l.function
                .as_deref()
                .map(|f| format!(" in {f}"))
                .unwrap_or_default()
        );
        if k == 0 {
            locations.push(location(&l.path, l.line, cwd, t.as_deref(), None));
        } else {
            related.push(location(&l.path, l.line, cwd, t.as_deref(), Some(role)));
        }
    }
    let follow = m
        .follow_on_of
        .map(|k| format!(" (a follow-on of result {}: fix that one first)", k + 1))
        .unwrap_or_default();
    let mut result = json!({
        "ruleId": rule_id(f),
        "ruleIndex": rule_index,
        "level": level(m),
        "message": { "text": format!("{}: {} record(s) from {} thread(s) in {} block(s){follow}", f.text, f.records, f.threads.max(1), f.blocks.max(1)) },
        "locations": locations,
    });
    if !related.is_empty() {
        result["relatedLocations"] = Value::Array(
            related
                .into_iter()
                .enumerate()
                .map(|(k, mut l)| {
                    l["id"] = json!(k + 1);
                    l
                })
                .collect(),
        );
    }
    result["properties"] = json!({ "tool": f.tool.name(), "kind": f.kind.name(), "index": i + 1 });
    result
}

/// Warnings and leaks are warnings, a follow-on a note, anything else an error.
fn level(m: &MergedFinding) -> &'static str {
    match (m.finding.level.as_deref(), m.finding.kind) {
        (Some("Warning"), _) | (_, crate::exercise::manifest::FindingKind::Leak) => "warning",
        _ if m.follow_on_of.is_some() => "note",
        _ => "error",
    }
}

/// A tool that timed out, failed or crashed: an error notification of the run.
fn notifications(r: &SanitizeReport) -> Vec<Value> {
    r.tools
        .iter()
        .filter(|t| matches!(t.status, ToolStatus::TimedOut | ToolStatus::ToolError | ToolStatus::Crashed))
        .map(|t| json!({ "level": "error", "message": { "text": format!("{}: {}", t.tool.name(), t.summary) } }))
        .collect()
}
