//! The timed-outputs rule: every call's outputs, under ncu and in the call timing, compared with
//! the reference fix's of the same call.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::exercise::compare::{self, Comparison};
use crate::exercise::data;
use crate::exercise::reference::Buffer;
use crate::exercise::workbook::Exercise;

use super::{CallTimes, Flag, JudgeInputs, Rule};
use crate::engine::plan::Timer;

/// Compare each call's outputs of one timed process with the reference fix's of the same call (the
/// same inputs): None where they agree or cannot be compared (the reference's own are missing),
/// else the first difference.
pub(super) fn outputs_differ(
    mine: &[PathBuf],
    theirs: &[PathBuf],
    kept: Option<&OnceLock<Option<Vec<Vec<Buffer>>>>>,
    ex: &Exercise,
    what: &str,
) -> Option<String> {
    let read = || {
        on_threads(theirs, |p| data::read_outputs(p).ok())
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .filter(|v| !v.is_empty())
    };
    let owned;
    let theirs = match kept {
        Some(k) => k.get_or_init(read).as_ref()?,
        None => {
            owned = read()?;
            &owned
        }
    };
    if mine.len() < theirs.len() {
        return Some(format!(
            "the {what} left the outputs of {} of its {} calls",
            mine.len(),
            theirs.len()
        ));
    }
    let calls: Vec<(usize, &PathBuf, &Vec<Buffer>)> = mine
        .iter()
        .zip(theirs)
        .enumerate()
        .map(|(k, (mine, theirs))| (k + 1, mine, theirs))
        .collect();
    let tolerance = ex.manifest.manifest.tolerance;
    on_threads(&calls, |&(call, mine, theirs)| {
        let got = match data::read_outputs(mine) {
            Ok(g) => g,
            Err(e) => {
                return Some(format!(
                    "call {call} of the {what} left no readable outputs ({e})"
                ))
            }
        };
        match compare::compare(theirs, &got, tolerance) {
            Comparison::Equal { .. } => None,
            Comparison::Shape(msg) => Some(format!("call {call} of the {what}: {msg}")),
            Comparison::Mismatch(m) => Some(format!(
                "call {call} of the {what}: {}[{}] = {} where the reference fix computed {} on the same inputs ({} of {} elements differ)",
                m.buffer, m.index, m.got, m.expected, m.bad_count, m.len
            )),
        }
    })
    .into_iter()
    .flatten()
    .next()
}

/// `f` of each item, in order, at most `COMPARING` at a time: a call's outputs take 0.3 s to read
/// where they are 256 MiB (52-bank-conflicts, 63-transfers), and a check compares ten calls and
/// more. Memory: no more than `READING_AT_ONCE` calls' outputs are read at once in the whole
/// process, however many pairs `grade` judges side by side (one per core).
pub(super) fn on_threads<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    const COMPARING: usize = 4;
    const READING_AT_ONCE: usize = 8;
    static READING: (std::sync::Mutex<usize>, std::sync::Condvar) =
        (std::sync::Mutex::new(0), std::sync::Condvar::new());
    /// A permit to read, given back when dropped (a panicking comparison included).
    struct Permit;
    impl Drop for Permit {
        fn drop(&mut self) {
            let (count, freed) = &READING;
            *count
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) -= 1;
            freed.notify_one();
        }
    }
    let permitted = |item: &T| {
        let (count, freed) = &READING;
        let mut n = count
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *n >= READING_AT_ONCE {
            n = freed
                .wait(n)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *n += 1;
        drop(n);
        let _permit = Permit;
        f(item)
    };
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(COMPARING) {
        std::thread::scope(|s| {
            let running: Vec<_> = chunk
                .iter()
                .map(|item| s.spawn(|| permitted(item)))
                .collect();
            out.extend(
                running
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
            );
        });
    }
    out
}

/// The first call whose outputs changed after the program said it was done, in `what`.
pub(super) fn written_late(calls: Option<&CallTimes>, what: &str) -> Option<String> {
    let k = calls?.changed.iter().position(|c| *c)? + 1;
    Some(format!("call {k} of the {what} went on writing its outputs after it said it was done (what the grader read at the end of the call differs from what was there a moment later): work after the clock stopped"))
}

/// The timed-outputs rule: every call of the learner's runs under ncu (where ncu ran) and on the
/// grader's clock, compared with the reference fix's of the same call, and none written after its
/// call ended.
pub(super) fn timed_outputs(i: &JudgeInputs, repeat: u32) -> Option<Flag> {
    let kept = i.reference.read_once;
    // Every timed stage of a session serves the same calls: where the reference fix's run under ncu
    // was kept from an earlier check (`engine::kept`), its whole calls of this check stand for it.
    let (reference_ncu, reference_ncu_kept) = if i.reference.ncu_outputs.is_empty() {
        let served = (repeat as usize).min(i.reference.call_outputs.len());
        (&i.reference.call_outputs[..served], kept.map(|k| &k.call))
    } else {
        (i.reference.ncu_outputs, kept.map(|k| &k.ncu))
    };
    // Where the driver times the kernels, no run was under ncu: the plain calls are all there is.
    let under_ncu = i.timer != Timer::Driver;
    for (mine, theirs, kept, calls, what) in [
        (
            i.learner.ncu_outputs,
            reference_ncu,
            reference_ncu_kept,
            i.learner.ncu_calls,
            "run under ncu",
        ),
        (
            i.learner.call_outputs,
            i.reference.call_outputs,
            kept.map(|k| &k.call),
            i.learner.call,
            "call timing run",
        ),
    ]
    .into_iter()
    .skip(usize::from(!under_ncu))
    {
        if let Some(why) =
            outputs_differ(mine, theirs, kept, i.ex, what).or_else(|| written_late(calls, what))
        {
            return Some(Flag::new(Rule::TimedOutputs, why));
        }
    }
    None
}
