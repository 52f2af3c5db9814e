//! One file: the `Launcher` seam and its five launchers, which wrap one another; 142 of its lines are tests.
//!
//! The seam between the stages and the processes they start. Every job a stage runs goes through a
//! `Launcher`:
//!
//! - `Local` runs it as it is (process group, timeout, leak detection): `--isolation none`.
//! - `Sandboxed` runs confined jobs in the sandbox at the strongest level this machine permits
//!   (`auto`) or refuses to run them without namespaces (`strict`).
//! - `Recorder` wraps another launcher and keeps what each keyed job printed, its exit and the files
//!   it wrote: a recording made on a GPU. Paths under the workbook are kept as `${WORKBOOK}/...`
//!   and served under the workbook that replays them (`Rooted`), so a recording holds no path of
//!   the machine it was made on.
//! - `Replay` serves such a recording back, so that `check` and `verify` run end to end on a machine
//!   without a GPU, through the same plans, with real tool output.
//! - `Kept` runs a job once and serves that run again afterwards: the measurements of versions that
//!   do not change between a learner's checks (`engine::kept` decides which, and for how long).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::exercise::workbook::swap_root;
use crate::tools::runner::{self, Captured, Exit, Finished, Job, SpawnError};
use crate::tools::sandbox::{Confinement, Isolation, Level};

pub trait Launcher: Send + Sync {
    fn launch(&self, job: &Job) -> Result<Finished, SpawnError>;
    /// The level confined jobs run at.
    fn isolation(&self) -> Level;
    /// Whether this launcher runs real processes on a GPU it can see (a replay has recorded ones).
    fn replays(&self) -> bool {
        false
    }
    /// Whether it keeps a recording of every job: then every job must really run through it.
    fn records(&self) -> bool {
        false
    }
}

/// Runs every job as it is: a process group of its own, the timeout, leak detection on the pipes.
pub struct Local;

impl Launcher for Local {
    /// A job's unset level is the process group's.
    fn launch(&self, job: &Job) -> Result<Finished, SpawnError> {
        runner::run(job)
    }
    fn isolation(&self) -> Level {
        Level::ProcessGroup
    }
}

/// Runs confined jobs in the sandbox at `level`; other jobs as `Local` does.
pub struct Sandboxed {
    level: Level,
}

#[derive(Debug, thiserror::Error)]
#[error("--isolation strict needs PID, mount and network namespaces, and this machine refused them ({0}); use --isolation auto to run with what it permits")]
pub struct StrictUnavailable(String);

impl Sandboxed {
    /// The strongest level this machine permits, found once per process by running `true` in it.
    pub fn probe() -> (Level, Option<String>) {
        static PROBED: OnceLock<(Level, Option<String>)> = OnceLock::new();
        PROBED
            .get_or_init(|| {
                let Ok(dir) = tempfile::tempdir() else {
                    return (Level::ProcessGroup, Some("no temporary folder".into()));
                };
                let mut why = None;
                for level in [Level::Namespaces, Level::Subreaper] {
                    let mut job = Job::new("/bin/true", Duration::from_secs(30)).cwd(dir.path());
                    job.confine = Some(Confinement {
                        writable: vec![dir.path().to_path_buf()],
                        handed_over: vec![dir.path().to_path_buf()],
                        ..Confinement::default()
                    });
                    job.level = Some(level);
                    match runner::run(&job) {
                        Ok(f) if f.success() => return (level, why),
                        Ok(f) => {
                            why = why.or(Some(format!("`true` ended with {}", f.describe_exit())))
                        }
                        Err(e) => why = why.or(Some(e.source.to_string())),
                    }
                }
                (Level::ProcessGroup, why)
            })
            .clone()
    }

    /// The launcher `--isolation` asks for: `Local` for none; else the strongest level this
    /// machine permits, which `strict` requires to be namespaces.
    pub fn for_isolation(isolation: Isolation) -> Result<Box<dyn Launcher>, StrictUnavailable> {
        if isolation == Isolation::None {
            return Ok(Box::new(Local));
        }
        let (level, why) = Sandboxed::probe();
        if isolation == Isolation::Strict && level < Level::Namespaces {
            return Err(StrictUnavailable(
                why.unwrap_or_else(|| "no reason given".into()),
            ));
        }
        Ok(Box::new(Sandboxed { level }))
    }
}

impl Launcher for Box<dyn Launcher> {
    fn launch(&self, job: &Job) -> Result<Finished, SpawnError> {
        self.as_ref().launch(job)
    }
    fn isolation(&self) -> Level {
        self.as_ref().isolation()
    }
    fn replays(&self) -> bool {
        self.as_ref().replays()
    }
    fn records(&self) -> bool {
        self.as_ref().records()
    }
}

impl Launcher for Sandboxed {
    fn launch(&self, job: &Job) -> Result<Finished, SpawnError> {
        let mut job = job.clone();
        job.level = job.confine.as_ref().map(|_| self.level);
        runner::run(&job)
    }
    fn isolation(&self) -> Level {
        self.level
    }
}

/// What a recording keeps of one job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recorded {
    pub command: String,
    /// "code 0", "signal 11" or "timed out".
    pub exit: String,
    pub stdout: String,
    pub stderr: String,
    pub wall_ms: u64,
    #[serde(default)]
    pub leftovers: usize,
    /// The job's output files by position, as names of files in the recording's folder (None where
    /// the job did not write it).
    pub outputs: Vec<Option<String>>,
}

fn exit_text(e: Exit) -> String {
    match e {
        Exit::Code(c) => format!("code {c}"),
        Exit::Signal(s) => format!("signal {s}"),
        Exit::TimedOut => "timed out".into(),
    }
}

/// `exit_text` read back; None for anything else (a recording edited by hand, or from a newer
/// grader), which is refused rather than taken for a timeout.
fn parse_exit(s: &str) -> Option<Exit> {
    let number = |p: &str| s.strip_prefix(p).and_then(|n| n.trim().parse().ok());
    match (number("code "), number("signal ")) {
        (Some(c), _) => Some(Exit::Code(c)),
        (_, Some(sig)) => Some(Exit::Signal(sig)),
        _ => (s == exit_text(Exit::TimedOut)).then_some(Exit::TimedOut),
    }
}

/// A key as a file name: "03-race/learner/racecheck" -> "03-race.learner.racecheck".
fn file_stem(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_".contains(c) {
                c
            } else {
                '.'
            }
        })
        .collect()
}

/// Where a recording's paths under the workbook are kept, in place of the recording machine's root.
pub const WORKBOOK_MARK: &str = "${WORKBOOK}";

/// A workbook root, swapped for `WORKBOOK_MARK` in what is recorded and back in what is served.
#[derive(Debug, Clone, Copy)]
pub struct Rooted<'a>(pub &'a Path);

impl Rooted<'_> {
    /// `bytes` with every path under the root (and the root itself) written as the mark.
    fn kept(self, bytes: &[u8]) -> Vec<u8> {
        let root = self.0.as_os_str().as_encoded_bytes();
        swap_root(bytes, root, WORKBOOK_MARK.as_bytes())
    }
    /// `bytes` with the mark written as this root.
    fn served(self, bytes: &[u8]) -> Vec<u8> {
        let root = self.0.as_os_str().as_encoded_bytes();
        swap_root(bytes, WORKBOOK_MARK.as_bytes(), root)
    }
    fn kept_text(self, text: &str) -> String {
        String::from_utf8_lossy(&self.kept(text.as_bytes())).into_owned()
    }
}

/// Keeps every keyed job's result in `dir` (one JSON and its output files per key) while `inner`
/// runs it, with the workbook's `root` kept as `WORKBOOK_MARK`.
pub struct Recorder<L> {
    pub inner: L,
    pub dir: PathBuf,
    pub root: PathBuf,
}

impl<L: Launcher> Launcher for Recorder<L> {
    fn launch(&self, job: &Job) -> Result<Finished, SpawnError> {
        let finished = self.inner.launch(job)?;
        if let Some(key) = &job.key {
            let root = Some(Rooted(&self.root));
            let _ = Recorded::keep(job, &finished, &self.dir, &file_stem(key), &[], root);
        }
        Ok(finished)
    }
    fn isolation(&self) -> Level {
        self.inner.isolation()
    }
    fn records(&self) -> bool {
        true
    }
}

impl Recorded {
    /// Keep `finished` of `job` in `dir` as `stem.json`, with each output file beside it, but those
    /// in `leave` (what is too large to keep and not needed again); paths under `root`, where one
    /// is given, are kept as `WORKBOOK_MARK`.
    pub fn keep(
        job: &Job,
        finished: &Finished,
        dir: &Path,
        stem: &str,
        leave: &[PathBuf],
        root: Option<Rooted>,
    ) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let outputs = job
            .outputs
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let name = format!("{stem}.out{i}");
                // Copied aside, then renamed: a reader never serves a half-written file.
                let copied = |p: &Path| -> std::io::Result<()> {
                    let aside = tempfile::NamedTempFile::new_in(dir)?;
                    match root {
                        Some(root) => std::fs::write(aside.path(), root.kept(&std::fs::read(p)?))?,
                        None => drop(std::fs::copy(p, aside.path())?),
                    }
                    aside.persist(dir.join(&name)).map_err(|e| e.error)?;
                    Ok(())
                };
                (!leave.contains(p))
                    .then(|| copied(p).ok().map(|_| name.clone()))
                    .flatten()
            })
            .collect();
        let text = |t: String| root.map_or_else(|| t.clone(), |r| r.kept_text(&t));
        let rec = Recorded {
            command: text(job.display()),
            exit: exit_text(finished.exit),
            stdout: text(finished.stdout.text()),
            stderr: text(finished.stderr.text()),
            wall_ms: finished.wall.as_millis() as u64,
            leftovers: finished.leftovers,
            outputs,
        };
        let text = serde_json::to_string_pretty(&rec).map_err(std::io::Error::other)?;
        crate::exercise::workbook::write_atomically(&dir.join(format!("{stem}.json")), &text)
    }

    /// Read what `keep` left as `stem.json` in `dir`.
    pub fn read(dir: &Path, stem: &str) -> std::io::Result<Recorded> {
        let path = dir.join(format!("{stem}.json"));
        let text = std::fs::read_to_string(&path)?;
        serde_json::from_str(&text)
            .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))
    }

    /// Serve this run to `job`: its output files written where `job` wants them (from `dir`), its
    /// exit and output as a `Finished` at `isolation`; `WORKBOOK_MARK` is served as `root`, where
    /// one is given.
    pub fn serve(
        &self,
        job: &Job,
        dir: &Path,
        isolation: Option<Level>,
        root: Option<Rooted>,
    ) -> Result<Finished, SpawnError> {
        for (to, from) in job.outputs.iter().zip(&self.outputs) {
            let _ = std::fs::remove_file(to);
            if let Some(name) = from {
                let served = |from: &Path| match root {
                    Some(root) => std::fs::write(to, root.served(&std::fs::read(from)?)),
                    None => std::fs::copy(from, to).map(drop),
                };
                served(&dir.join(name)).map_err(|e| SpawnError {
                    program: job.program.display().to_string(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!("{name}: {e}"),
                    ),
                })?;
            }
        }
        let captured = |s: &str| Captured {
            bytes: root.map_or_else(|| s.as_bytes().to_vec(), |r| r.served(s.as_bytes())),
            dropped: 0,
        };
        let exit = parse_exit(&self.exit).ok_or_else(|| SpawnError {
            program: job.program.display().to_string(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "the recording's exit `{}` is none of `code N`, `signal N`, `timed out`",
                    self.exit
                ),
            ),
        })?;
        Ok(Finished {
            exit,
            stdout: captured(&self.stdout),
            stderr: captured(&self.stderr),
            wall: Duration::from_millis(self.wall_ms),
            leftovers: self.leftovers,
            escaped: false,
            oom_killed: false,
            gpu_memory_over: None,
            isolation,
        })
    }
}

/// Runs a job once and serves that run again, from `dir/stem.json` and its files, for as long as
/// they are there. Only a run that succeeded is kept, and not the files in `leave` (each call's
/// outputs: up to 256 MiB a call, and not needed again).
pub struct Kept<'a> {
    pub inner: &'a dyn Launcher,
    pub dir: PathBuf,
    pub stem: String,
    pub leave: Vec<PathBuf>,
}

impl Kept<'_> {
    /// `kept` where there is one, `plain` otherwise.
    pub fn or<'b>(kept: &'b Option<Kept<'_>>, plain: &'b dyn Launcher) -> &'b dyn Launcher {
        match kept {
            Some(k) => k,
            None => plain,
        }
    }
    /// Whether a kept run is there to serve.
    pub fn holds(&self) -> bool {
        self.dir.join(format!("{}.json", self.stem)).is_file()
    }
    /// Drop the kept run (one the caller found unusable).
    pub fn forget(&self) {
        let _ = std::fs::remove_file(self.dir.join(format!("{}.json", self.stem)));
    }
}

impl Launcher for Kept<'_> {
    fn launch(&self, job: &Job) -> Result<Finished, SpawnError> {
        let isolation = job.confine.as_ref().map(|_| self.isolation());
        // Nothing kept, or a kept run that cannot be served: run it.
        if let Ok(rec) = Recorded::read(&self.dir, &self.stem) {
            if let Ok(served) = rec.serve(job, &self.dir, isolation, None) {
                return Ok(served);
            }
        }
        let finished = self.inner.launch(job)?;
        if finished.success() && finished.left_running().is_none() {
            let _ = Recorded::keep(job, &finished, &self.dir, &self.stem, &self.leave, None);
        }
        Ok(finished)
    }
    fn isolation(&self) -> Level {
        self.inner.isolation()
    }
    fn replays(&self) -> bool {
        self.inner.replays()
    }
    fn records(&self) -> bool {
        self.inner.records()
    }
}

/// Serves a recording: a keyed job gets the recorded output, exit and files, written where this
/// job asks for them. A job without a key (a build) runs for real through `builds`; a keyed job
/// with no recording is an error that names the key.
pub struct Replay<L> {
    pub dir: PathBuf,
    pub builds: L,
    /// The workbook that replays: served in place of `WORKBOOK_MARK`.
    pub root: PathBuf,
    recorded: BTreeMap<String, Recorded>,
}

impl<L: Launcher> Replay<L> {
    pub fn open(dir: &Path, root: &Path, builds: L) -> std::io::Result<Replay<L>> {
        let mut recorded = BTreeMap::new();
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            // gpu.json names the GPU the recording was made on; every other JSON is a job.
            if path.extension().is_some_and(|e| e == "json")
                && path.file_name().is_some_and(|n| n != "gpu.json")
            {
                let text = std::fs::read_to_string(&path)?;
                let rec: Recorded = serde_json::from_str(&text)
                    .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))?;
                recorded.insert(
                    path.file_stem()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned(),
                    rec,
                );
            }
        }
        Ok(Replay {
            dir: dir.to_path_buf(),
            builds,
            root: root.to_path_buf(),
            recorded,
        })
    }
}

impl<L: Launcher> Launcher for Replay<L> {
    fn launch(&self, job: &Job) -> Result<Finished, SpawnError> {
        let Some(key) = &job.key else {
            return self.builds.launch(job);
        };
        let rec = self
            .recorded
            .get(&file_stem(key))
            .ok_or_else(|| SpawnError {
                program: job.program.display().to_string(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("the recording in {} has no job `{key}`", self.dir.display()),
                ),
            })?;
        rec.serve(
            job,
            &self.dir,
            job.confine.as_ref().map(|_| self.isolation()),
            Some(Rooted(&self.root)),
        )
    }
    fn isolation(&self) -> Level {
        self.builds.isolation()
    }
    fn replays(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_exit_reads_back_as_written_and_other_text_is_refused() {
        for exit in [
            Exit::Code(0),
            Exit::Code(86),
            Exit::Signal(9),
            Exit::TimedOut,
        ] {
            assert_eq!(parse_exit(&exit_text(exit)), Some(exit));
        }
        // Once read back as a timeout: a hand-edited or newer recording now says what it holds.
        assert_eq!(parse_exit("killed"), None);
        let rec = Recorded {
            command: "/bin/true".into(),
            exit: "killed".into(),
            stdout: String::new(),
            stderr: String::new(),
            wall_ms: 1,
            leftovers: 0,
            outputs: Vec::new(),
        };
        let job = Job::new("/bin/true", Duration::from_secs(1));
        let err = rec
            .serve(&job, Path::new("/nonexistent"), None, None)
            .unwrap_err();
        assert!(err.to_string().contains("`killed`"), "{err}");
    }

    #[test]
    fn a_recording_replays_output_exit_and_files_where_the_new_job_wants_them() {
        let rec_dir = tempfile::tempdir().unwrap();
        let (work, elsewhere_root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let root = work.path();
        let out = root.join("a.out");
        // The job prints paths under the workbook, writes one into its file and names one that
        // merely starts like it.
        let job = Job::new("/bin/sh", Duration::from_secs(10))
            .arg("-c")
            .arg(format!(
                "echo hi {r}/x; echo data {r} > {o}; echo {r}2; exit 3",
                r = root.display(),
                o = out.display()
            ))
            .key("03-race/learner/correctness")
            .output(&out);
        let recorder = Recorder {
            inner: Local,
            dir: rec_dir.path().to_path_buf(),
            root: root.to_path_buf(),
        };
        assert!(
            recorder.records() && !Local.records(),
            "a recording is made of every job: nothing is served from what was kept"
        );
        let real = recorder.launch(&job).unwrap();
        assert_eq!(real.exit, Exit::Code(3));
        let kept = Recorded::read(rec_dir.path(), "03-race.learner.correctness").unwrap();
        let made_on = root.display().to_string();
        assert!(
            ![&kept.stdout, &kept.command]
                .iter()
                .any(|t| t.contains(&format!("{made_on}/"))),
            "no path of the recording machine is kept: {kept:?}"
        );
        assert!(kept.stdout.starts_with("hi ${WORKBOOK}/x\n"), "{kept:?}");

        // Replayed in another workbook: its paths, in the output and in the files.
        let there = elsewhere_root.path();
        let elsewhere = there.join("b.out");
        let mut again = job.clone();
        again.program = "/nonexistent/never-run".into();
        again.outputs = vec![elsewhere.clone()];
        let replay = Replay::open(rec_dir.path(), there, Local).unwrap();
        let f = replay.launch(&again).unwrap();
        let t = there.display();
        assert_eq!(
            (f.exit, f.stdout.text()),
            (Exit::Code(3), format!("hi {t}/x\n{made_on}2\n"))
        );
        assert_eq!(
            std::fs::read_to_string(elsewhere).unwrap(),
            format!("data {t}\n")
        );

        let unknown = Job::new("/bin/true", Duration::from_secs(1)).key("01-index/x");
        assert!(replay
            .launch(&unknown)
            .unwrap_err()
            .to_string()
            .contains("no job `01-index/x`"));
    }

    #[test]
    fn a_kept_run_is_served_again_without_the_files_it_leaves() {
        let kept_dir = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let (small, big) = (work.path().join("times"), work.path().join("call-1.out"));
        let counter = work.path().join("runs");
        let job = Job::new("/bin/sh", Duration::from_secs(10))
            .arg("-c")
            .arg(format!(
                "echo run >> {c}; echo 12 > {s}; echo outputs > {b}",
                c = counter.display(),
                s = small.display(),
                b = big.display()
            ))
            .output(&small)
            .output(&big);
        let kept = Kept {
            inner: &Local,
            dir: kept_dir.path().to_path_buf(),
            stem: "original-timing-1".into(),
            leave: vec![big.clone()],
        };
        assert!(!kept.holds());
        assert!(kept.launch(&job).unwrap().success());
        assert!(kept.holds());
        std::fs::remove_file(&small).unwrap();
        assert!(kept.launch(&job).unwrap().success());
        assert_eq!(
            std::fs::read_to_string(&counter).unwrap(),
            "run\n",
            "served, not run"
        );
        assert_eq!(std::fs::read_to_string(&small).unwrap(), "12\n");
        assert!(!big.exists(), "a file it leaves is not served");

        // A failed run is not kept; a forgotten one runs again.
        kept.forget();
        assert!(!kept.holds());
        let failing = Job::new("/bin/sh", Duration::from_secs(10))
            .arg("-c")
            .arg("exit 1");
        assert!(!kept.launch(&failing).unwrap().success());
        assert!(!kept.holds());
    }
}
