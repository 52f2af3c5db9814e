//! Who has a GPU, run by run: up to a number of runs side by side (sanitizers, cases), from any of
//! the plans that share the GPU (grade's lanes, a chunk's fresh inputs beside the next chunk's
//! tools), or one holder alone (the profiler, the whole calls, a run again alone). One per GPU.
//!
//! Held run by run, not phase by phase: a holder that wants the GPU alone waits only for the runs
//! in flight, and no new run starts while it waits; the lanes of a worker draw their runs from one
//! pool of slots rather than each from its own (two lanes of 16 processes each slowed every run:
//! book/gpu-runs/2026-12-01-sass-50/). Against the lock it replaced, held by each phase for its
//! builds and all its runs, one student's bug track graded as fast on an H200 (157.3 s against
//! 156.4 s and 168.6 s, by turns: book/gpu-runs/2026-12-02-share-50/).

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

/// One GPU's share.
#[derive(Debug, Default)]
pub struct GpuShare {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    beside: usize,
    alone: bool,
    /// Holders waiting to have the GPU alone: no run starts beside while one waits.
    want_alone: usize,
}

/// A run beside others: its slot is free again when this is dropped.
#[must_use]
pub struct Beside<'a>(&'a GpuShare);

/// The GPU alone until this is dropped.
#[must_use]
pub struct Alone<'a>(&'a GpuShare);

impl GpuShare {
    /// The share of GPU `gpu` (None: the default device), the same for every caller in this process.
    pub fn of(gpu: Option<&str>) -> Arc<GpuShare> {
        type Shares = Mutex<BTreeMap<Option<String>, Arc<GpuShare>>>;
        static SHARES: OnceLock<Shares> = OnceLock::new();
        let mut shares = SHARES
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        shares.entry(gpu.map(str::to_string)).or_default().clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait_while<'g>(
        &self,
        guard: MutexGuard<'g, State>,
        busy: impl FnMut(&mut State) -> bool,
    ) -> MutexGuard<'g, State> {
        self.changed
            .wait_while(guard, busy)
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot beside other runs, at most `slots` at once: waits while the GPU is held alone, while
    /// a holder waits for it, or while every slot is taken.
    pub fn beside(&self, slots: usize) -> Beside<'_> {
        let mut state = self.wait_while(self.lock(), |s| {
            s.alone || s.want_alone > 0 || s.beside >= slots.max(1)
        });
        state.beside += 1;
        Beside(self)
    }

    /// The GPU alone: waits for the runs in flight to end (none starts meanwhile) and for any other
    /// holder.
    pub fn alone(&self) -> Alone<'_> {
        let mut state = self.lock();
        state.want_alone += 1;
        let mut state = self.wait_while(state, |s| s.alone || s.beside > 0);
        state.want_alone -= 1;
        state.alone = true;
        Alone(self)
    }
}

impl Drop for Beside<'_> {
    fn drop(&mut self) {
        self.0.lock().beside -= 1;
        self.0.changed.notify_all();
    }
}

impl Drop for Alone<'_> {
    fn drop(&mut self) {
        self.0.lock().alone = false;
        self.0.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    #[test]
    fn runs_beside_stop_at_the_slots_and_wait_while_a_holder_waits_for_the_gpu_alone() {
        let share = GpuShare::default();
        let (first, second) = (share.beside(2), share.beside(2));
        let started = AtomicUsize::new(0);
        let (alone_at, alone_sent) = mpsc::channel();
        std::thread::scope(|scope| {
            // A third run waits for a slot.
            let third = scope.spawn(|| {
                let _slot = share.beside(2);
                started.fetch_add(1, Ordering::SeqCst);
            });
            drop(first);
            third.join().unwrap();
            assert_eq!(started.load(Ordering::SeqCst), 1, "a freed slot is taken");
            // A holder asks for the GPU alone while `second` runs: it waits for it, and a run
            // that asks for a slot meanwhile waits until the holder is done.
            let holder = scope.spawn(|| {
                let _alone = share.alone();
                alone_at.send(started.load(Ordering::SeqCst)).unwrap();
            });
            while share.lock().want_alone == 0 {
                std::thread::yield_now();
            }
            let late = scope.spawn(|| {
                let _slot = share.beside(2);
                started.fetch_add(1, Ordering::SeqCst);
            });
            assert!(
                alone_sent.try_recv().is_err(),
                "the GPU is not alone while a run is in flight"
            );
            drop(second);
            assert_eq!(
                alone_sent.recv().unwrap(),
                1,
                "the run that asked for a slot after the holder waited for it"
            );
            holder.join().unwrap();
            late.join().unwrap();
        });
        assert_eq!(started.load(Ordering::SeqCst), 2);
        let state = share.lock();
        assert_eq!((state.beside, state.alone, state.want_alone), (0, false, 0));
    }
}
