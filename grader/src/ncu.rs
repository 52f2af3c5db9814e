//! Nsight Compute: time kernels with `gpu__time_duration.sum` at base clocks and parse the CSV with the
//! csv crate, by column name.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::runner::{self, Finished, Job};

pub const METRIC: &str = "gpu__time_duration.sum";

/// One profiled kernel launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Launch {
    pub process: String,
    /// The function name without its parameter list.
    pub kernel: String,
    pub nanoseconds: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("ncu wrote no CSV header (\"ID\",...) - it probably failed: {0}")]
    NoHeader(String),
    #[error("ncu CSV: {0}")]
    Csv(#[from] csv::Error),
    #[error("ncu CSV: column `{0}` is missing")]
    MissingColumn(&'static str),
    #[error("ncu CSV: `{0}` is not a number")]
    BadNumber(String),
}

/// Parse ncu's `--csv --print-units base` output. Lines before the header (`==PROF==` lines, the
/// program's own output) are skipped; values carry thousands separators ("3,303,104").
pub fn parse(text: &str) -> Result<Vec<Launch>, ParseError> {
    let start = text
        .find("\"ID\",")
        .ok_or_else(|| ParseError::NoHeader(text.lines().take(5).collect::<Vec<_>>().join(" | ")))?;
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(text[start..].as_bytes());
    let headers = reader.headers()?.clone();
    let column = |name: &'static str| headers.iter().position(|h| h == name).ok_or(ParseError::MissingColumn(name));
    let (process, kernel, metric, unit, value) =
        (column("Process Name")?, column("Kernel Name")?, column("Metric Name")?, column("Metric Unit")?, column("Metric Value")?);
    let mut launches = Vec::new();
    for row in reader.records() {
        let row = row?;
        // A program's own output after the CSV (or ncu's closing lines) is not a data row.
        if row.len() != headers.len() || row.get(metric) != Some(METRIC) {
            continue;
        }
        let raw = row.get(value).unwrap_or("");
        // A launch that failed (the program crashed) is reported with the value "nan": no time.
        if raw == "nan" || raw == "n/a" {
            continue;
        }
        let mut ns: f64 = raw.replace(',', "").parse().map_err(|_| ParseError::BadNumber(raw.to_string()))?;
        ns *= match row.get(unit).unwrap_or("ns") {
            "us" | "usecond" => 1e3,
            "ms" | "msecond" => 1e6,
            "s" | "second" => 1e9,
            _ => 1.0,
        };
        let full = row.get(kernel).unwrap_or("");
        launches.push(Launch {
            process: row.get(process).unwrap_or("").to_string(),
            kernel: full.split('(').next().unwrap_or(full).trim().to_string(),
            nanoseconds: ns,
        });
    }
    Ok(launches)
}

/// One program to time: a process name ncu will report and the command that starts it.
#[derive(Debug, Clone)]
pub struct Target {
    /// Also the file name of the binary, which is what ncu reports as "Process Name".
    pub name: String,
    pub program: std::path::PathBuf,
    pub args: Vec<String>,
    /// Kernel function names whose times count for this program.
    pub kernels: Vec<String>,
    /// How many times the program runs its bench: its time is the total divided by this.
    pub repeat: u32,
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// One ncu process that profiles several programs in turn (`--target-processes all` follows the
/// shell's children), so the tool's start-up cost is paid once and all times share one session.
pub fn job(ncu: &Path, targets: &[Target], csv_path: &Path, timeout: Duration) -> Job {
    let script = targets
        .iter()
        .map(|t| std::iter::once(&t.program.display().to_string()).chain(&t.args).map(|w| shell_quote(w)).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("; ");
    let mut unique: Vec<&String> = targets.iter().flat_map(|t| &t.kernels).collect();
    unique.sort();
    unique.dedup();
    let filter = format!("regex:^({})$", unique.iter().map(|k| k.as_str()).collect::<Vec<_>>().join("|"));
    Job::new(ncu, timeout)
        .args(["--csv", "--print-units", "base", "--metrics", METRIC, "--clock-control", "base", "--cache-control", "all"])
        .args(["--target-processes", "all", "-k", &filter, "--log-file"])
        .arg(csv_path)
        .args(["/bin/sh", "-c", &script])
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Spawn(#[from] runner::SpawnError),
    #[error("ncu {exit}: {output}")]
    Failed { exit: String, output: String },
    #[error(transparent)]
    Parse(#[from] ParseError),
}

/// Per target: the summed kernel time per repeat (ns), or None where ncu saw no launch.
#[derive(Debug, Clone)]
pub struct Timing {
    pub command: String,
    pub per_target: BTreeMap<String, Option<f64>>,
    pub launches: Vec<Launch>,
    pub finished: Finished,
}

/// Time `targets`: per target, the sum of its own kernels' launches divided by its `repeat`.
///
/// When a profiled program fails, ncu ends the whole session and the targets after it never run. The
/// program ncu connected to last is then taken to have failed (its partial times are dropped), and
/// the targets after it get a new session.
pub fn run(ncu: &Path, targets: &[Target], csv_path: &Path, timeout: Duration) -> Result<Timing, RunError> {
    let mut launches = Vec::new();
    let mut commands = Vec::new();
    let mut pending: &[Target] = targets;
    let mut last = None;
    while !pending.is_empty() {
        let _ = std::fs::remove_file(csv_path);
        let job = job(ncu, pending, csv_path, timeout);
        let finished = runner::run(&job)?;
        commands.push(job.display());
        let text = std::fs::read_to_string(csv_path).unwrap_or_default();
        if !text.contains("\"ID\",") && !finished.success() && launches.is_empty() {
            return Err(RunError::Failed { exit: finished.describe_exit(), output: format!("{}\n{}", text, finished.output()) });
        }
        let mut session = parse(&text)?;
        let failed = !finished.success();
        last = Some(finished);
        pending = match failed.then(|| last_connected(&text, pending)).flatten() {
            // That program was running when the session ended: its times are partial, drop them,
            // and go on with the programs after it.
            Some(i) => {
                session.retain(|l| !launched_by(&pending[i], l));
                &pending[i + 1..]
            }
            None => &[],
        };
        launches.extend(session);
    }
    let per_target = targets
        .iter()
        .map(|t| {
            let mine: Vec<&Launch> = launches.iter().filter(|l| launched_by(t, l) && t.kernels.contains(&l.kernel)).collect();
            let total: f64 = mine.iter().map(|l| l.nanoseconds).sum();
            (t.name.clone(), (!mine.is_empty()).then(|| total / t.repeat.max(1) as f64))
        })
        .collect();
    Ok(Timing { command: commands.join("\n"), per_target, launches, finished: last.expect("at least one session") })
}

/// The target whose process ncu connected to last ("==PROF== Connected to process 1901 (/path/prog)").
fn last_connected(log: &str, targets: &[Target]) -> Option<usize> {
    let line = log.lines().rev().find(|l| l.contains("Connected to process"))?;
    let path = line.rsplit_once('(')?.1.trim_end().trim_end_matches(')');
    targets.iter().position(|t| Path::new(path) == t.program)
}

/// ncu reports the process name, at most 15 characters on Linux, so compare a prefix.
pub fn launched_by(target: &Target, launch: &Launch) -> bool {
    !launch.process.is_empty() && target.name.starts_with(&launch.process)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "==PROF== Connected to process 1622 (/p/coalesce)\nstrided ms=26.363\n\
\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
\"0\",\"1622\",\"coalesce\",\"127.0.0.1\",\"copyStrided(const float *, float *, int, int)\",\"1\",\"7\",\"(256, 1, 1)\",\"(32, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"dram__bytes_read.sum\",\"byte\",\"273,708,032\"\n\
\"0\",\"1622\",\"coalesce\",\"127.0.0.1\",\"copyStrided(const float *, float *, int, int)\",\"1\",\"7\",\"(256, 1, 1)\",\"(32, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"gpu__time_duration.sum\",\"ns\",\"3,304,160\"\n\
\"1\",\"1622\",\"coalesce\",\"127.0.0.1\",\"copyCoalesced(const float *, float *, int, int)\",\"1\",\"7\",\"(256, 1, 1)\",\"(262144, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"gpu__time_duration.sum\",\"ns\",\"210,560\"\n";

    #[test]
    fn parses_times_by_column_name_and_strips_separators() {
        let l = parse(SAMPLE).unwrap();
        assert_eq!(l.len(), 2, "only the duration metric rows");
        assert_eq!((l[0].process.as_str(), l[0].kernel.as_str(), l[0].nanoseconds), ("coalesce", "copyStrided", 3_304_160.0));
        assert_eq!(l[1].nanoseconds, 210_560.0);
    }

    #[test]
    fn no_header_is_an_error_that_shows_what_ncu_said() {
        let e = parse("==ERROR== ERR_NVGPUCTRPERM").unwrap_err();
        assert!(e.to_string().contains("ERR_NVGPUCTRPERM"));
    }

    #[test]
    fn the_job_profiles_every_target_in_one_session() {
        let t = |n: &str| Target {
            name: n.into(),
            program: format!("/b/{n}").into(),
            args: vec!["--repeat".into(), "3".into()],
            kernels: vec!["k".into()],
            repeat: 3,
        };
        let job = job(Path::new("ncu"), &[t("a"), t("it's")], Path::new("/o.csv"), Duration::from_secs(1));
        let line = job.display();
        assert!(line.contains("regex:^(k)$"), "{line}");
        assert!(line.contains(r"'/b/a' '--repeat' '3'; '/b/it'\''s'"), "{line}");
    }
}
