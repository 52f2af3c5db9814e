//! cudabugs' grading engine, laid out as its pipeline:
//!
//! - `exercise`: what is graded: manifests, regions, the Rust references, the catalog, seeded data.
//! - `tools`: how anything runs: the process supervisor, the launcher and its sandbox, nvcc,
//!   compute-sanitizer, ncu, the GPU.
//! - `engine`: the context, plans of typed stages, the scheduler that runs them, what a tool
//!   found and the evidence a timed run leaves.
//! - `judge`: the judges: every verdict, the speed judge, the performance track.
//! - `plans`: `check`, `verify`, `sanitize` and `grade`.
//! - `learner`: progress, hints, reset, watch.
//! - `report`: text for people (JSON is the serde form of the same structs).
//!
//! The manifest layer (`exercise::{manifest, regions, reference, catalog}`) has no heavy
//! dependencies so that `build.rs` can validate exercises with it; everything else sits behind the
//! `engine` feature.

pub mod environment;
pub mod exercise;
pub mod exit;

#[cfg(feature = "engine")]
pub mod class;

#[cfg(feature = "engine")]
pub mod engine;
#[cfg(feature = "engine")]
pub mod hash;
#[cfg(feature = "engine")]
pub mod judge;
#[cfg(feature = "engine")]
pub mod learner;
#[cfg(feature = "engine")]
pub mod plans;
#[cfg(feature = "engine")]
pub mod report;
#[cfg(feature = "engine")]
pub mod tools;
#[cfg(feature = "engine")]
pub mod untrusted;
