//! compute-sanitizer: run a program under one tool with `--xml --save`, parse the XML into typed
//! records (serde + quick-xml), and map each record to a kind and to source locations.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::exercise::manifest::{FindingKind, Tool};
use crate::tools::runner::{self, Exit, Finished, Job};

mod xml;

pub use xml::{parse, XmlError};

/// Exit status compute-sanitizer returns when it found errors.
pub const ERROR_EXITCODE: i32 = 86;

// ---- The typed form the grader works with.

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceLocation {
    pub path: String,
    pub line: u32,
    pub function: Option<String>,
    /// The role of this location in the record: "access", "write", "read", "frame".
    pub role: String,
}

impl SourceLocation {
    /// "reduce.cu:22": the file's name and the line, as tables show it.
    pub fn short(&self) -> String {
        format!(
            "{}:{}",
            Path::new(&self.path)
                .file_name()
                .unwrap_or_default()
                .to_string_lossy(),
            self.line
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub tool: Tool,
    pub kind: FindingKind,
    /// The record's own words, e.g. "Invalid __global__ write of size 4 bytes".
    pub text: String,
    pub level: Option<String>,
    pub thread: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    /// Hazard count (racecheck analysis records).
    pub count: Option<u64>,
    /// Every source location the record names, most specific first: the access, the device
    /// frames, then the host frames (role "host": the launch, the allocation or the API call),
    /// which carry lines when the host code was built with -g.
    pub locations: Vec<SourceLocation>,
}

impl Record {
    /// The locations that lie in `source` (matched by path, or by file name when paths differ).
    pub fn locations_in<'a>(
        &'a self,
        source: &'a Path,
    ) -> impl Iterator<Item = &'a SourceLocation> + 'a {
        let file_name = source.file_name().map(|n| n.to_string_lossy().into_owned());
        self.locations.iter().filter(move |l| {
            let p = Path::new(&l.path);
            p == source
                || (file_name.is_some()
                    && p.file_name().map(|n| n.to_string_lossy().into_owned()) == file_name)
        })
    }
}

/// One tool run: the records and the raw material behind them.
#[derive(Debug, Clone)]
pub struct ToolRun {
    pub tool: Tool,
    pub command: String,
    pub records: Vec<Record>,
    pub xml_path: PathBuf,
    pub finished: Finished,
}

impl ToolRun {
    /// Whether the tool itself failed (as opposed to reporting errors, or the program failing):
    /// no XML was written and the exit was not the tool's error code.
    pub fn tool_failed(&self) -> bool {
        !self.xml_path.is_file() && self.finished.exit != Exit::Code(ERROR_EXITCODE)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SanitizerError {
    #[error(transparent)]
    Spawn(#[from] runner::SpawnError),
    #[error("{0} (XML at {1})")]
    Parse(XmlError, PathBuf),
}

/// The most records a run reports. A learner needs the first few of each kind, not thousands of
/// copies of one bad store. It does not make the runs faster: on the H200 the untouched 01 and 05
/// took 9-12 s under their tools with 64 as with 200 (the tool still checks every access), but it
/// keeps the XML and the text a learner scrolls through short.
pub const PRINT_LIMIT: u32 = 64;

/// "12 record(s)", or "64+ records, the --print-limit" where the tool stopped reporting.
pub fn records_text(count: usize) -> String {
    if count >= PRINT_LIMIT as usize {
        format!("{count}+ records, the --print-limit")
    } else {
        format!("{count} record(s)")
    }
}

/// `options`: the manifest's extra options for this tool (checked against its allow-list when the
/// manifest was read).
pub fn job(
    sanitizer: &Path,
    tool: Tool,
    xml_path: &Path,
    program: &Path,
    args: &[std::ffi::OsString],
    options: &[String],
    timeout: Duration,
) -> Job {
    let mut job = Job::new(sanitizer, timeout)
        .args(["--tool", tool.name(), "--xml", "--save"])
        .arg(xml_path)
        .args([
            "--error-exitcode",
            &ERROR_EXITCODE.to_string(),
            "--print-limit",
            &PRINT_LIMIT.to_string(),
        ])
        // The harness never forks. A program that does (a daemon) is not followed: the tool ends
        // with the program, and the sandbox kills and reports what it left running.
        .args(["--target-processes", "application-only"]);
    // The leak check is always on; an option given twice is an error to compute-sanitizer, so
    // the manifest's own `--leak-check` replaces it.
    if tool == Tool::Memcheck && !options.iter().any(|o| o == "--leak-check") {
        job = job.args(["--leak-check", "full"]);
    }
    job.args(options.iter().cloned())
        .arg(program)
        .args(args.iter().cloned())
}

/// Run a job made by `job` (confined by the caller where it runs learner code) and parse what the
/// tool saved at `xml_path`.
pub fn run(
    launcher: &dyn crate::tools::launcher::Launcher,
    tool: Tool,
    job: &Job,
    xml_path: &Path,
) -> Result<ToolRun, SanitizerError> {
    let _ = std::fs::remove_file(xml_path);
    let finished = launcher.launch(job)?;
    let xml = crate::untrusted::read_text(xml_path).unwrap_or_default();
    let mut records =
        parse(tool, &xml).map_err(|e| SanitizerError::Parse(e, xml_path.to_path_buf()))?;
    // A run killed at its limit may never have saved its XML; what it printed is all there is.
    if xml.trim().is_empty() && finished.exit == Exit::TimedOut {
        records = deadlocks_in_text(tool, &finished.stdout.text());
    }
    Ok(ToolRun {
        tool,
        command: job.display(),
        records,
        xml_path: xml_path.to_path_buf(),
        finished,
    })
}

/// racecheck's deadlock reports in its text output, for a run killed before it saved its XML:
/// "========= Deadlock detected in Cuda::barrier wait called by threads starting at (0,0,0) in
/// block (0,0,0), ... at kernel+0x1190 in app.cu:98" (the manual's words; UNCONFIRMED on a GPU).
fn deadlocks_in_text(tool: Tool, text: &str) -> Vec<Record> {
    if tool != Tool::Racecheck {
        return Vec::new();
    }
    text.lines()
        .filter_map(|line| {
            let line = line.trim_start_matches('=').trim();
            if !line.starts_with("Deadlock detected") {
                return None;
            }
            // The last " in FILE:LINE" names the wait.
            let (_, place) = line.rsplit_once(" in ")?;
            let (path, number) = place.trim().rsplit_once(':')?;
            let location = SourceLocation {
                path: path.to_string(),
                line: number.trim().parse().ok()?,
                function: None,
                role: "access".into(),
            };
            Some(Record {
                tool,
                kind: FindingKind::Deadlock,
                text: line.to_string(),
                level: None,
                thread: None,
                block: None,
                count: None,
                locations: vec![location],
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_options_go_to_the_tool_and_replace_its_own_leak_check() {
        let shown = |options: &[&str], tool| {
            let options: Vec<String> = options.iter().map(|o| o.to_string()).collect();
            job(
                Path::new("cs"),
                tool,
                Path::new("o.xml"),
                Path::new("prog"),
                &[],
                &options,
                Duration::from_secs(3),
            )
            .display()
        };
        let memcheck = shown(&["--track-stream-ordered-races", "all"], Tool::Memcheck);
        assert!(
            memcheck.contains("--leak-check full --track-stream-ordered-races all prog"),
            "{memcheck}"
        );
        let replaced = shown(&["--leak-check", "no"], Tool::Memcheck);
        assert!(
            replaced.contains("--leak-check no prog") && !replaced.contains("full"),
            "{replaced}"
        );
        let racecheck = shown(&["--racecheck-deadlock-timeout", "1000"], Tool::Racecheck);
        assert!(
            racecheck.contains("--racecheck-deadlock-timeout 1000 prog")
                && !racecheck.contains("leak"),
            "{racecheck}"
        );
    }

    #[test]
    fn a_deadlock_printed_by_a_run_killed_before_its_xml_is_read_from_the_text() {
        let text = "========= RACECHECK\n========= Deadlock detected in Cuda::barrier wait called by threads starting at (0,0,0) in block (0,0,0), (active mask: 0xffffffff), barrier address: 0x0 at kernel+0x1190 in /w/app.cu:98\n=========     and more\n";
        let found = deadlocks_in_text(Tool::Racecheck, text);
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].kind, found[0].locations[0].short()),
            (FindingKind::Deadlock, "app.cu:98".to_string())
        );
        assert!(
            deadlocks_in_text(Tool::Memcheck, text).is_empty(),
            "only racecheck reports deadlocks"
        );
        assert!(
            deadlocks_in_text(Tool::Racecheck, "========= Deadlock detected somewhere\n")
                .is_empty(),
            "no line, no record"
        );
    }

    #[test]
    fn a_deadlock_in_cuda_s_barrier_code_is_evidence_for_the_hang_s_region() {
        use crate::judge::verdict::{findings, in_region};
        // 30-mbarrier-count under racecheck on an H100, killed at its 3 s limit.
        let h100 = "========= Deadlock detected in Cuda::barrier wait called by threads starting at (160,0,0) in block (16,0,0), (active mask: 0xffffffff), barrier address: 0x4400 at cuda::__4::barrier<(cuda::std::__4::thread_scope)2, cuda::std::__4::__empty_completion>::__try_wait(unsigned long) const+0x740 in barrier_block_scope.h:192\n";
        let found = findings(
            &deadlocks_in_text(Tool::Racecheck, h100),
            Path::new("dot.cu"),
            &[],
        );
        assert_eq!((found.len(), found[0].kind), (1, FindingKind::Deadlock));
        assert!(
            in_region(&found[0], "bug"),
            "it names CUDA's barrier, not the learner's line"
        );
        // A deadlock at a line of the learner's file must be in the region to count.
        let mine = findings(&deadlocks_in_text(Tool::Racecheck, "========= Deadlock detected in Cuda::barrier wait called by threads starting at (0,0,0) in block (0,0,0) at k+0x10 in /w/dot.cu:98\n"), Path::new("dot.cu"), &[]);
        assert!(!in_region(&mine[0], "bug"));
    }
}
