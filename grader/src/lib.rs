//! cudabugs' grading engine. The manifest layer (`manifest`, `regions`, `reference`, `catalog`) has no
//! heavy dependencies so that `build.rs` can validate exercises with it; everything that drives nvcc,
//! compute-sanitizer, ncu and the GPU sits behind the `engine` feature.

pub mod catalog;
pub mod manifest;
pub mod reference;
pub mod regions;

#[cfg(feature = "engine")]
pub mod check;
#[cfg(feature = "engine")]
pub mod compare;
#[cfg(feature = "engine")]
pub mod context;
#[cfg(feature = "engine")]
pub mod data;
#[cfg(feature = "engine")]
pub mod gpu;
#[cfg(feature = "engine")]
pub mod learner;
#[cfg(feature = "engine")]
pub mod ncu;
#[cfg(feature = "engine")]
pub mod nvcc;
#[cfg(feature = "engine")]
pub mod outcome;
#[cfg(feature = "engine")]
pub mod runner;
#[cfg(feature = "engine")]
pub mod sanitizer;
#[cfg(feature = "engine")]
pub mod state;
#[cfg(feature = "engine")]
pub mod steps;
#[cfg(feature = "engine")]
pub mod toolchain;
#[cfg(feature = "engine")]
pub mod verify;
#[cfg(feature = "engine")]
pub mod workbook;
#[cfg(feature = "engine")]
pub mod report;
#[cfg(feature = "engine")]
pub mod watch;
