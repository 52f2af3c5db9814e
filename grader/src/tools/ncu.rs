//! Nsight Compute: time kernels with `gpu__time_duration.sum` at base clocks and parse the CSV with the
//! csv crate, by column name.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tools::launcher::Launcher;
use crate::tools::runner::{self, Finished, Job};

/// The kernel time every ncu run collects (`counters::TIME`).
pub const METRIC: &str = crate::tools::counters::TIME;

/// One profiled kernel launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Launch {
    pub process: String,
    /// The function name without its parameter list.
    pub kernel: String,
    pub nanoseconds: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum CsvError {
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
pub fn parse(text: &str) -> Result<Vec<Launch>, CsvError> {
    let start = text
        .find("\"ID\",")
        .ok_or_else(|| CsvError::NoHeader(text.lines().take(5).collect::<Vec<_>>().join(" | ")))?;
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(&text.as_bytes()[start..]);
    let headers = reader.headers()?.clone();
    let column = |name: &'static str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or(CsvError::MissingColumn(name))
    };
    let (process, kernel, metric, unit, value) = (
        column("Process Name")?,
        column("Kernel Name")?,
        column("Metric Name")?,
        column("Metric Unit")?,
        column("Metric Value")?,
    );
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
        let mut ns: f64 = raw
            .replace(',', "")
            .parse()
            .map_err(|_| CsvError::BadNumber(raw.to_string()))?;
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

/// The slowest over the fastest repeat of a bench, from the launches of `kernels` in the order ncu
/// saw them (each repeat launches the same kernels); None for one repeat, or where the launches do
/// not split evenly into the repeats.
pub fn repeat_spread(launches: &[Launch], kernels: &[String], repeat: u32) -> Option<f64> {
    let mine: Vec<&Launch> = launches
        .iter()
        .filter(|l| kernels.contains(&l.kernel))
        .collect();
    let repeat = repeat as usize;
    if repeat < 2 || mine.is_empty() || !mine.len().is_multiple_of(repeat) {
        return None;
    }
    let repeats: Vec<&[&Launch]> = mine.chunks(mine.len() / repeat).collect();
    let same_kernels =
        |a: &[&Launch], b: &[&Launch]| a.iter().zip(b).all(|(x, y)| x.kernel == y.kernel);
    if repeats.iter().any(|r| !same_kernels(r, repeats[0])) {
        return None;
    }
    let per: Vec<f64> = repeats
        .iter()
        .map(|r| r.iter().map(|l| l.nanoseconds).sum())
        .collect();
    let (lo, hi) = per
        .iter()
        .fold((f64::INFINITY, 0f64), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    (lo > 0.0).then_some(hi / lo)
}

/// One program to time: a process name ncu will report and the command that starts it.
#[derive(Debug, Clone)]
pub struct ProfileTarget {
    /// Also the file name of the binary, which is what ncu reports as "Process Name".
    pub name: String,
    pub program: std::path::PathBuf,
    pub args: Vec<String>,
    /// Kernel function names whose times count for this program; empty: every kernel it launches
    /// (a library baseline, whose kernels have the library's names).
    pub kernels: Vec<String>,
    /// Counters collected beside the time, in the same ncu process (performance exercises).
    pub counters: Vec<String>,
    /// Profile every kernel the program launches, not only `kernels` (whose times still count):
    /// `grade` checks that the named kernels are the ones launched.
    pub every_kernel: bool,
    /// How many times the program runs its bench: its time is the total divided by this.
    pub repeat: u32,
}

/// What `grade`'s anti-cheat rules read beside the time: the DRAM bytes the timed kernels read
/// (proof that they read their inputs) and the warp instructions they executed.
pub const AUDIT_COUNTERS: &[&str] = &["dram__bytes_read.sum", "smsp__inst_executed.sum"];

/// An empty folder in `dir` (made here) for ncu's `--section-folder`: the grader names every
/// metric it reads on ncu's command line, and reading ncu's stock section files took 0.25-0.3 s of
/// each ncu process on an H200 (1.52-1.67 s a run against 1.75-1.94 s,
/// book/gpu-runs/2026-12-01-ncu-50/). Readable in the sandbox where `dir` is, written by no run;
/// whatever is found there is removed (a section or rule file would change what ncu reports).
pub fn no_sections(dir: &Path) -> std::path::PathBuf {
    let folder = dir.join("ncu-no-sections");
    let _ = std::fs::create_dir_all(&folder);
    for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
        let _ = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(entry.path()),
            _ => std::fs::remove_file(entry.path()),
        };
    }
    folder
}

/// ncu timing `metrics` at base clocks with cold caches, CSV with base units, no section files
/// (`no_sections`), its log to `csv_path`: what every ncu job of the grader runs with.
fn base(ncu: &Path, metrics: &str, sections: &Path, csv_path: &Path, timeout: Duration) -> Job {
    Job::new(ncu, timeout)
        .args([
            "--csv",
            "--print-units",
            "base",
            "--metrics",
            metrics,
            "--clock-control",
            "base",
            "--cache-control",
            "all",
            "--section-folder",
        ])
        .arg(sections)
        .arg("--log-file")
        .arg(csv_path)
}

/// One ncu process profiling one program, with the CSV written to `csv_path`; `sections` is an
/// empty folder (`no_sections`).
pub fn job(
    ncu: &Path,
    target: &ProfileTarget,
    (csv_path, sections): (&Path, &Path),
    timeout: Duration,
) -> Job {
    let metrics = std::iter::once(METRIC)
        .chain(target.counters.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(",");
    let filter = (!target.kernels.is_empty() && !target.every_kernel).then(|| {
        [
            "-k".to_string(),
            format!("regex:^({})$", target.kernels.join("|")),
        ]
    });
    base(ncu, &metrics, sections, csv_path, timeout)
        .args(filter.into_iter().flatten())
        .arg(&target.program)
        .args(&target.args)
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(transparent)]
    Spawn(#[from] runner::SpawnError),
    #[error("ncu {exit}: {output}")]
    Failed { exit: String, output: String },
    #[error(transparent)]
    Parse(#[from] CsvError),
}

/// What ncu measured for one target.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The summed time of the target's kernels per repeat (ns); None where the program failed or
    /// ncu saw none of its kernels.
    pub nanoseconds: Option<f64>,
    pub launches: Vec<Launch>,
    pub command: String,
    pub finished: Finished,
    /// How many ncu processes it took (more than one when the profiler was busy).
    pub attempts: u32,
    /// The profiler was still busy at the last attempt.
    pub busy: bool,
    /// ncu's own log, where ncu itself failed rather than the program.
    pub tool_failure: Option<String>,
    /// The target's counters (and its median time), where it asked for counters and ran.
    pub counters: Option<crate::tools::counters::Counters>,
}

impl Measured {
    /// The CSV ncu wrote (for `verify --keep`), read back from its command line.
    pub fn csv(&self) -> Option<&Path> {
        self.command
            .split(" --log-file ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .map(Path::new)
    }

    /// Why there is no time, in words.
    pub fn why_untimed(&self) -> String {
        if self.busy {
            format!("ncu found the profiler busy {} times", self.attempts)
        } else if !self.finished.success() {
            format!("the program failed: {}", self.finished.describe_exit())
        } else {
            "ncu saw none of its timed kernels".into()
        }
    }
}

/// How many times a target is profiled before a busy profiler counts as a failure.
const ATTEMPTS: u32 = 3;

/// Whether ncu gave up because another profiling session held the GPU's counters. Seen on an H200
/// with several ncu processes at once, now and then, despite ncu's lock file ("Profiling failed
/// because a driver resource was unavailable"); the same target profiles fine when run again.
/// ncu says so only in its log text, which has no structure to parse.
pub fn profiler_was_busy(log: &str) -> bool {
    log.lines()
        .any(|l| l.starts_with("==ERROR==") && l.contains("a driver resource was unavailable"))
}

/// Time one target with `job` (made by `job`, confined by the caller), whose CSV goes to `csv`. A
/// program that fails (the untouched exercise may crash) gets no time: its partial launches are
/// dropped. A busy profiler is tried again, up to `ATTEMPTS` times. `tool_failure` is ncu's own log
/// where ncu itself failed (no permission to the counters, say).
pub fn measure(
    launcher: &dyn Launcher,
    job: &Job,
    target: &ProfileTarget,
    csv: &Path,
) -> Result<Measured, ProfileError> {
    let mut attempt = 1;
    let (finished, text) = loop {
        let _ = std::fs::remove_file(csv);
        let finished = launcher.launch(job)?;
        let text = crate::untrusted::read_text(csv).unwrap_or_default();
        if attempt == ATTEMPTS || !profiler_was_busy(&text) {
            break (finished, text);
        }
        std::thread::sleep(Duration::from_millis(500 * attempt as u64));
        attempt += 1;
    };
    let has_csv = text.contains("\"ID\",");
    let launches = if has_csv { parse(&text)? } else { Vec::new() };
    let mine: Vec<&Launch> = launches
        .iter()
        .filter(|l| target.kernels.is_empty() || target.kernels.contains(&l.kernel))
        .collect();
    // The CSV is read a second time, with every metric, only where counters were asked for.
    let counters = (finished.success() && has_csv && !target.counters.is_empty())
        .then(|| parse_metrics(&text).ok())
        .flatten()
        .and_then(|all| crate::tools::counters::aggregate(&all, &target.kernels, target.repeat));
    // With counters, the median repeat (a repeat the profiler's replay slowed counts less);
    // otherwise the mean, as the bug track has always timed.
    let nanoseconds = match &counters {
        Some(c) => Some(c.nanoseconds),
        None => (finished.success() && !mine.is_empty())
            .then(|| mine.iter().map(|l| l.nanoseconds).sum::<f64>() / target.repeat.max(1) as f64),
    };
    let busy = profiler_was_busy(&text);
    // ncu writes its own errors (==ERROR==) to the log file, the program's to the captured output.
    let tool_failure =
        (!has_csv && !finished.success() && text.contains("==ERROR==")).then_some(text);
    Ok(Measured {
        nanoseconds,
        launches,
        command: job.display(),
        finished,
        attempts: attempt,
        busy,
        tool_failure,
        counters,
    })
}

/// `sanitize --profile`: the few metrics that explain the common performance bugs of a kernel.
pub const PROFILE_METRICS: &[&str] = &[
    METRIC,
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    // Threads active per executed warp instruction (32: no divergence). The share of uniform branch
    // targets reads 0% for a kernel that executes no branch at all (seen on an H100), so not that.
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
];

/// One ncu process profiling every kernel of `program args` with `PROFILE_METRICS`; `sections`
/// is an empty folder (`no_sections`).
pub fn profile_job(
    ncu: &Path,
    (program, args): (&Path, &[std::ffi::OsString]),
    (csv_path, sections): (&Path, &Path),
    timeout: Duration,
) -> Job {
    base(ncu, &PROFILE_METRICS.join(","), sections, csv_path, timeout)
        .arg(program)
        .args(args.iter().cloned())
}

pub use crate::tools::counters::LaunchMetrics;

/// Every launch in ncu's CSV with all its metrics (one row per metric, grouped by the launch ID).
pub fn parse_metrics(text: &str) -> Result<Vec<LaunchMetrics>, CsvError> {
    let start = text
        .find("\"ID\",")
        .ok_or_else(|| CsvError::NoHeader(text.lines().take(5).collect::<Vec<_>>().join(" | ")))?;
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(&text.as_bytes()[start..]);
    let headers = reader.headers()?.clone();
    let column = |name: &'static str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or(CsvError::MissingColumn(name))
    };
    let (id, kernel, grid, block, metric, value) = (
        column("ID")?,
        column("Kernel Name")?,
        column("Grid Size")?,
        column("Block Size")?,
        column("Metric Name")?,
        column("Metric Value")?,
    );
    let mut launches: Vec<(String, LaunchMetrics)> = Vec::new();
    for row in reader.records() {
        let row = row?;
        if row.len() != headers.len() {
            continue;
        }
        let raw = row.get(value).unwrap_or("").replace(',', "");
        let Ok(v) = raw.parse::<f64>() else { continue };
        let key = row.get(id).unwrap_or("").to_string();
        let i = match launches.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                let full = row.get(kernel).unwrap_or("");
                launches.push((
                    key,
                    LaunchMetrics {
                        kernel: full.split('(').next().unwrap_or(full).trim().to_string(),
                        grid: row.get(grid).unwrap_or("").to_string(),
                        block: row.get(block).unwrap_or("").to_string(),
                        metrics: BTreeMap::new(),
                    },
                ));
                launches.len() - 1
            }
        };
        launches[i]
            .1
            .metrics
            .insert(row.get(metric).unwrap_or("").to_string(), v);
    }
    Ok(launches.into_iter().map(|(_, l)| l).collect())
}

/// The GPU's ncu turn in the grader's lock folder `dir` (`engine::stages::ncu_turn`): an exclusive
/// lock on `dir/turn` (`tools::lock`), across the grader's processes on this machine, released when
/// dropped. None where the file cannot be opened or locked.
pub fn turn(dir: &Path) -> Option<Turn> {
    crate::tools::lock::exclusive(&dir.join("turn"))
}

/// An ncu job of the grader's own (the peak, the library baseline: not sandboxed), whose folders
/// are the lock folder `dir`: its TMPDIR (where ncu keeps its lock `nsight-compute-lock`), its HOME
/// (ncu's first run under a HOME copies its sections into `HOME/Documents`: 53 files under /root
/// on a fresh H200, which would outlive the grade outside every run folder) and its empty section
/// folder.
pub fn own_job(
    ncu: &Path,
    target: &ProfileTarget,
    (csv_path, dir): (&Path, &Path),
    timeout: Duration,
) -> Job {
    let home = dir.join("home");
    let _ = std::fs::create_dir_all(&home);
    job(ncu, target, (csv_path, &no_sections(dir)), timeout)
        .env("TMPDIR", dir)
        .env("HOME", home)
}

/// An ncu turn (`turn`): the lock ends when the file is closed.
pub type Turn = crate::tools::lock::Held;

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
        assert_eq!(
            (
                l[0].process.as_str(),
                l[0].kernel.as_str(),
                l[0].nanoseconds
            ),
            ("coalesce", "copyStrided", 3_304_160.0)
        );
        assert_eq!(l[1].nanoseconds, 210_560.0);
    }

    #[test]
    fn the_repeat_spread_compares_whole_repeats_of_every_timed_kernel() {
        let l = |kernel: &str, ns: f64| Launch {
            process: "p".into(),
            kernel: kernel.into(),
            nanoseconds: ns,
        };
        let kernels = vec!["a".to_string(), "b".to_string()];
        // Three repeats of a then b; "other" is not timed.
        let launches = [
            l("a", 10.0),
            l("b", 5.0),
            l("other", 99.0),
            l("a", 11.0),
            l("b", 5.5),
            l("a", 10.0),
            l("b", 5.0),
        ];
        let spread = repeat_spread(&launches, &kernels, 3).unwrap();
        assert!((spread - 1.1).abs() < 1e-12, "{spread}");
        assert_eq!(
            repeat_spread(&launches, &kernels, 1),
            None,
            "one repeat has no spread"
        );
        assert_eq!(
            repeat_spread(&launches[..4], &kernels, 3),
            None,
            "launches that do not split into the repeats"
        );
        let unordered = [l("a", 10.0), l("a", 11.0), l("b", 5.0), l("b", 5.5)];
        assert_eq!(
            repeat_spread(&unordered, &kernels, 2),
            None,
            "a a | b b are not two repeats of a b"
        );
    }

    #[test]
    fn no_header_is_an_error_that_shows_what_ncu_said() {
        let e = parse("==ERROR== ERR_NVGPUCTRPERM").unwrap_err();
        assert!(e.to_string().contains("ERR_NVGPUCTRPERM"));
    }

    #[test]
    fn the_section_folder_is_made_empty_and_kept_so() {
        let dir = tempfile::tempdir().unwrap();
        let folder = no_sections(dir.path());
        assert!(folder.is_dir());
        std::fs::write(folder.join("Forged.section"), "Identifier: \"x\"").unwrap();
        std::fs::create_dir(folder.join("rules")).unwrap();
        assert_eq!(no_sections(dir.path()), folder);
        assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
    }

    #[test]
    fn the_job_profiles_one_program_with_its_own_kernels() {
        let t = ProfileTarget {
            name: "03-it's".into(),
            program: "/b/03-it's".into(),
            args: vec!["--repeat".into(), "3".into()],
            kernels: vec!["k".into(), "j".into()],
            counters: Vec::new(),
            every_kernel: false,
            repeat: 3,
        };
        let line = job(
            Path::new("ncu"),
            &t,
            (Path::new("/o.csv"), Path::new("/empty")),
            Duration::from_secs(1),
        )
        .display();
        assert!(
            line.contains(
                "--section-folder /empty --log-file /o.csv -k 'regex:^(k|j)$' '/b/03-it'\\''s' --repeat 3"
            ),
            "{line}"
        );
        // A baseline times every kernel, with its counters in the same pass.
        let all = ProfileTarget {
            kernels: Vec::new(),
            counters: vec!["dram__bytes_read.sum".into()],
            ..t
        };
        let line = job(
            Path::new("ncu"),
            &all,
            (Path::new("/o.csv"), Path::new("/empty")),
            Duration::from_secs(1),
        )
        .display();
        assert!(
            line.contains("--metrics gpu__time_duration.sum,dram__bytes_read.sum")
                && !line.contains(" -k "),
            "{line}"
        );
    }
}
