//! The grader's arithmetic, in a crate of its own so that it is compiled optimised even where the
//! grader is not (Cargo.toml's dev profile): the Rust references of every exercise, the seeded
//! inputs drawn from a manifest's distributions, their little-endian encoding, and the scaled
//! inputs of the timed calls. The grader re-exports each module where it used to live
//! (`grader::exercise::{dtype, reference}`, `manifest::Dist`, `data`, `tools::served`).

pub mod codec;
pub mod dtype;
pub mod reference;
