//! The whole calls' runs, one after another, as a relay: each program's start-up (its process,
//! its sandbox, the CUDA context) runs while the run before it tears down (its context destroyed,
//! its sandbox removed), and its calls wait until that run has exited.
//!
//! On an H100 a 03-race call run took 0.44 s: 0.23 s until the program was ready, 0.04 s of calls,
//! 0.17 s to end. Each run started only once the last had exited, so a chunk's timed phase paid for
//! every start-up and every tear-down. On an H200 the relay took a bug class's timed phases from
//! 46.2 s to 37.9 s (book/gpu-runs/2026-11-30-relay-50/). The ncu runs are not relayed: there it
//! saved nothing (`scheduler`'s profiler phase).
//!
//! What stays true: no timed call shares the GPU with another relayed program. The next run starts
//! only once this one's calls are made (`Ticket::calls_done`), and makes its own only once this
//! one has exited (`Ticket::take_turn`, when the ticket is dropped after the run). A run that is not
//! served (nothing tells when it is ready) takes its turn before it starts.

use std::sync::{Arc, Condvar, Mutex};

/// One phase's relay of timed runs.
#[derive(Debug, Default)]
pub struct Relay {
    state: Mutex<Held>,
    changed: Condvar,
}

/// Whether a run holds the start (it may still make calls) and whether one holds the turn (its
/// program may still be alive).
#[derive(Debug, Default)]
struct Held {
    start: bool,
    turn: bool,
}

impl Relay {
    pub fn new() -> Arc<Relay> {
        Arc::new(Relay::default())
    }

    /// A run's place in the relay: returns once the run before it has made its calls (or ended).
    pub fn ticket(self: &Arc<Self>) -> Arc<Ticket> {
        self.take(|h| &mut h.start);
        Arc::new(Ticket {
            relay: self.clone(),
            held: Mutex::new(Held {
                start: true,
                turn: false,
            }),
        })
    }

    fn take(&self, which: impl Fn(&mut Held) -> &mut bool) {
        let mut held = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while *which(&mut held) {
            held = self.changed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        *which(&mut held) = true;
    }

    fn give(&self, which: impl Fn(&mut Held) -> &mut bool) {
        let mut held = self.state.lock().unwrap_or_else(|e| e.into_inner());
        *which(&mut held) = false;
        self.changed.notify_all();
    }
}

/// One run's hold on its relay: the start from `Relay::ticket`, the turn from `take_turn`; what it
/// still holds is given back when the last clone is dropped, after the run.
#[derive(Debug)]
pub struct Ticket {
    relay: Arc<Relay>,
    held: Mutex<Held>,
}

impl Ticket {
    /// Wait until the run before has exited; the GPU is this run's until the ticket is dropped.
    pub fn take_turn(&self) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if !held.turn {
            self.relay.take(|h| &mut h.turn);
            held.turn = true;
        }
    }

    /// This run's calls are made: the next run may start.
    pub fn calls_done(&self) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if std::mem::take(&mut held.start) {
            self.relay.give(|h| &mut h.start);
        }
    }
}

/// A served call run hands off with its ticket alone (`tools::served::Handoff`).
impl crate::tools::served::Handoff for Ticket {
    fn take_turn(&self) {
        Ticket::take_turn(self);
    }
    fn calls_done(&self) {
        Ticket::calls_done(self);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let held = self.held.get_mut().unwrap_or_else(|e| e.into_inner());
        if std::mem::take(&mut held.start) {
            self.relay.give(|h| &mut h.start);
        }
        if std::mem::take(&mut held.turn) {
            self.relay.give(|h| &mut h.turn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    const LONG: Duration = Duration::from_secs(20);

    /// The next run starts while this one tears down, calls once it has exited, and the run after
    /// that starts only once the next has made its calls.
    #[test]
    fn a_run_starts_once_the_last_made_its_calls_and_calls_once_it_exited() {
        let relay = Relay::new();
        let first = relay.ticket();
        first.take_turn();
        first.calls_done();
        let (said, heard) = mpsc::channel();
        std::thread::scope(|s| {
            let (relay, said) = (&relay, said.clone());
            s.spawn(move || {
                let second = relay.ticket();
                said.send("second started").unwrap();
                second.take_turn();
                said.send("second's turn").unwrap();
                let third = {
                    let relay = relay.clone();
                    let said = said.clone();
                    std::thread::spawn(move || {
                        let third = relay.ticket();
                        said.send("third started").unwrap();
                        third
                    })
                };
                std::thread::yield_now();
                said.send("second's calls done").unwrap();
                second.calls_done();
                drop(third.join().unwrap());
            });
            assert_eq!(heard.recv_timeout(LONG), Ok("second started"));
            assert!(
                heard.try_recv().is_err(),
                "no turn while the first is alive"
            );
            drop(first);
            assert_eq!(heard.recv_timeout(LONG), Ok("second's turn"));
            assert_eq!(heard.recv_timeout(LONG), Ok("second's calls done"));
            assert_eq!(heard.recv_timeout(LONG), Ok("third started"));
        });
    }

    #[test]
    fn a_run_that_never_called_gives_everything_back_when_dropped() {
        let relay = Relay::new();
        let first = relay.ticket();
        first.take_turn();
        drop(first);
        let second = relay.ticket();
        second.take_turn();
        second.calls_done();
        second.calls_done();
        drop(second);
        let third = relay.ticket();
        third.take_turn();
    }
}
