//! The pace a shared phase's tool runs set one another: a run still going when every other run of
//! the same tool on the same exercise has ended, and far slower than they were, is cut there (and
//! then run again alone: `rerun`), instead of holding every classmate's grade to the tool's whole
//! limit. On an H200, a program that slept 25 s before `main` held its 03 chunk's tools for 184 s
//! (90 s beside the others, 90 s again alone), where its seven classmates' runs took 1-5 s
//! (book/gpu-runs/2026-11-30-margin-50/).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::engine::plan::{Stage, StageKind, Submission};
use crate::engine::stages::Output;
use crate::tools::runner::{Driver, Running, Then};

/// A run held to its peers is held to this many times their median run (at least `FLOOR`): one
/// initcheck of 60 on an H100 stalled beside 12 processes where the others took 1-12 s, and took
/// 1-12 s alone.
pub const FACTOR: u32 = 4;
/// No run is held to less than this: an honest program several times slower under a tool than its
/// classmates' still finishes well within it (03's tools take 1-5 s a run on an H200).
pub const FLOOR: Duration = Duration::from_secs(30);
/// Fewer ended peers than this set no pace: a median of one or two runs says little.
const PEERS: usize = 3;
/// How often a run's pace is looked at: also how long the runner may wait, once the run has
/// ended, for its keeper to see it (it joins the keeper's thread).
const POLL: Duration = Duration::from_millis(50);

/// The limit `walls`, peers' runs of the same tool that ended by themselves, set: `FACTOR` times
/// their median, at least `FLOOR`, at most `limit`. The median, not the slowest: a classmate that
/// sleeps under every tool must not lift the limit for the next. None without peers.
pub fn peers_limit(walls: &[Duration], limit: Duration) -> Option<Duration> {
    held_to(walls, FLOOR, limit)
}

fn held_to(walls: &[Duration], floor: Duration, limit: Duration) -> Option<Duration> {
    let mut walls = walls.to_vec();
    walls.sort();
    let median = *walls.get(walls.len() / 2)?;
    Some((median * FACTOR).max(floor).min(limit))
}

/// How long a stage's process ran, where it ended by itself (not at a time limit): what a peer's
/// limit, or the program's own plain run, is measured from.
pub fn wall_of_its_own(o: &Output) -> Option<Duration> {
    o.wall().filter(|_| !timed_out(o))
}

/// Whether a stage's process was ended at its time limit (its own, or its peers' pace).
pub fn timed_out(o: &Output) -> bool {
    o.finished()
        .is_some_and(|f| f.exit == crate::tools::runner::Exit::TimedOut)
}

/// Which runs are one another's peers: the same tool on the same exercise.
type Peers = (Option<String>, StageKind);

/// The tool runs of one shared phase: how many of each kind are yet to end, and how long those that
/// ended by themselves took.
#[derive(Debug)]
pub struct Pace {
    runs: Mutex<BTreeMap<Peers, (usize, Vec<Duration>)>>,
    /// `FLOOR`, but for the tests.
    floor: Duration,
}

fn peers(sub: &Submission, stage: &Stage) -> Option<Peers> {
    matches!(stage.kind, StageKind::Sanitize(_))
        .then(|| (sub.exercise().map(|e| e.id().to_string()), stage.kind))
}

impl Pace {
    /// The pace of `stages`' tool runs over `subs`.
    pub fn of(subs: &[Submission], stages: &[Stage]) -> Arc<Pace> {
        let mut runs = BTreeMap::<Peers, (usize, Vec<Duration>)>::new();
        for s in stages {
            if let Some(p) = peers(&subs[s.subject], s) {
                runs.entry(p).or_default().0 += 1;
            }
        }
        Arc::new(Pace {
            runs: Mutex::new(runs),
            floor: FLOOR,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Peers, (usize, Vec<Duration>)>> {
        self.runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `stage` has ended (run, refused or not run at all): one fewer to wait for, and where it
    /// ended by itself, one more wall for the median.
    pub fn ended(&self, sub: &Submission, stage: &Stage, output: &Output) {
        let Some(p) = peers(sub, stage) else { return };
        let mut runs = self.lock();
        let Some((left, walls)) = runs.get_mut(&p) else {
            return;
        };
        *left = left.saturating_sub(1);
        walls.extend(wall_of_its_own(output));
    }

    /// The limit a run of `peers` is now held to: once it is the last of them still going.
    fn limit(&self, peers: &Peers, limit: Duration) -> Option<Duration> {
        let runs = self.lock();
        let (left, walls) = runs.get(peers)?;
        (*left <= 1 && walls.len() >= PEERS)
            .then(|| held_to(walls, self.floor, limit))
            .flatten()
    }

    /// What holds `stage`'s run to its peers' pace, for a run limited to `limit`.
    pub fn keeper(
        self: &Arc<Self>,
        sub: &Submission,
        stage: &Stage,
        limit: Duration,
    ) -> Option<Arc<dyn Driver>> {
        let peers = peers(sub, stage)?;
        Some(Arc::new(Keeper {
            pace: self.clone(),
            peers,
            limit,
        }))
    }
}

/// A tool run's driver: ends it as out of time once its peers set a pace it is past.
#[derive(Debug)]
struct Keeper {
    pace: Arc<Pace>,
    peers: Peers,
    limit: Duration,
}

impl Driver for Keeper {
    fn drive(&self, run: &Running) -> Then {
        while run.alive() {
            std::thread::sleep(POLL);
            let past = self
                .pace
                .limit(&self.peers, self.limit)
                .is_some_and(|l| run.started.elapsed() >= l);
            if past && run.alive() {
                return Then::OutOfTime;
            }
        }
        Then::Wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_four_medians_not_four_slowest_between_the_floor_and_the_tool_s_limit() {
        let s = Duration::from_secs;
        let limit = s(90);
        // An H200's 03 chunk: six honest runs of 3-4 s and a sleeper's 28 s.
        let walls = [s(3), s(3), s(4), s(4), s(4), s(4), s(28)];
        assert_eq!(peers_limit(&walls, limit), Some(FLOOR));
        assert_eq!(peers_limit(&[s(20), s(25), s(30)], limit), Some(limit));
        assert_eq!(peers_limit(&[s(10), s(11), s(12)], limit), Some(s(44)));
        assert_eq!(peers_limit(&[], limit), None);
    }

    #[test]
    fn the_last_run_of_its_tool_past_its_peers_pace_is_ended_as_out_of_time() {
        use crate::exercise::manifest::Tool;
        use crate::tools::runner::{run, Exit, Job};
        let ms = Duration::from_millis;
        let racecheck: Peers = (Some("03-race".into()), StageKind::Sanitize(Tool::Racecheck));
        // Three peers ended in 20 ms; with a 100 ms floor (`FLOOR` is 30 s), the last is held to
        // 100 ms, not its 60 s. The whole test waits about 0.4 s.
        let pace = |left: usize| {
            Arc::new(Pace {
                runs: Mutex::new([(racecheck.clone(), (left, vec![ms(20); 3]))].into()),
                floor: ms(100),
            })
        };
        let job = |pace: Arc<Pace>, script: &str| {
            let mut job = Job::new("/bin/sh", Duration::from_secs(60))
                .arg("-c")
                .arg(script);
            job.driver = Some(Arc::new(Keeper {
                pace,
                peers: racecheck.clone(),
                limit: Duration::from_secs(60),
            }));
            job
        };
        let cut = run(&job(pace(1), "sleep 30")).unwrap();
        assert_eq!(cut.exit, Exit::TimedOut, "{cut:?}");
        assert!(cut.wall < Duration::from_secs(10), "{:?}", cut.wall);
        let within = run(&job(pace(1), "sleep 0.02; echo done")).unwrap();
        assert_eq!(within.exit, Exit::Code(0), "{within:?}");
        // Another run of the tool still going: no pace yet, so it runs on (here, to its end).
        let waiting = run(&job(pace(2), "sleep 0.3; echo done")).unwrap();
        assert_eq!(waiting.exit, Exit::Code(0), "{waiting:?}");
    }
}
