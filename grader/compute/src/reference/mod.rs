//! The expected answers, computed in Rust from the same inputs the harness gets. Never taken from a
//! solution file: a solution is checked against these like any learner's file.

use crate::dtype::DType;

mod buffers;
mod early;
mod hopper;
mod launches;
mod matrices;
mod memory;
mod numerics;
mod streams;
mod warps;

use buffers::{out, param};
pub use buffers::{Buffer, Data, Params, ReferenceFn, Signature};
pub use early::{
    COOLING_AMBIENT, COOLING_RATE, DIFFUSE_STEPS, PARTICLE_FIELDS, RELAX_STEPS, WMA_TAPS,
};

/// Every group's references and signatures: the first exercises' (01-30 and 58-63, `early.rs`),
/// then one file per group of the later exercises.
type Group = (
    &'static [(&'static str, ReferenceFn)],
    &'static [(&'static str, Signature)],
);

const GROUPS: &[Group] = &[
    (early::REFERENCES, early::SIGNATURES),
    (memory::REFERENCES, memory::SIGNATURES),
    (streams::REFERENCES, streams::SIGNATURES),
    (launches::REFERENCES, launches::SIGNATURES),
    (warps::REFERENCES, warps::SIGNATURES),
    (numerics::REFERENCES, numerics::SIGNATURES),
    (matrices::REFERENCES, matrices::SIGNATURES),
    (hopper::REFERENCES, hopper::SIGNATURES),
];

/// Parameters a reference repeats its step for, with no buffer's length to bound them, and how many
/// times at most: each step costs the reference a pass over its data, and unlike a fixed-point map
/// (`cooling`, whose loop stops when a step changes nothing) these may not settle for millions of
/// steps. A manifest's case past the limit is an error at its line.
const LOOP_LIMITS: &[(&str, &str, i64)] = &[
    ("jacobi-sweeps", "sweeps", 1024),
    ("chain-top-mode", "steps", 1024),
    ("affine-jump4", "squarings", 1024),
];

/// The most times reference `name` may repeat its step for parameter `param`, where it has a limit.
pub fn loop_limit(name: &str, param: &str) -> Option<i64> {
    LOOP_LIMITS
        .iter()
        .find(|(r, p, _)| *r == name && *p == param)
        .map(|(_, _, limit)| *limit)
}

pub fn signature(name: &str) -> Option<&'static Signature> {
    GROUPS
        .iter()
        .flat_map(|(_, signatures)| signatures.iter())
        .find(|(n, _)| *n == name)
        .map(|(_, s)| s)
}

pub fn lookup(name: &str) -> Option<ReferenceFn> {
    GROUPS
        .iter()
        .flat_map(|(references, _)| references.iter())
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
}

pub fn names() -> Vec<&'static str> {
    GROUPS
        .iter()
        .flat_map(|(references, _)| references.iter())
        .map(|(n, _)| *n)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_resolves() {
        for name in names() {
            assert!(lookup(name).is_some());
        }
        assert!(lookup("nope").is_none());
    }
}
