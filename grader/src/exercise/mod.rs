//! The exercise side of the pipeline: what a submission is graded against.

pub mod catalog;
// The references and the element types live in the crate that is compiled optimised.
pub use cudabugs_compute::{dtype, reference};
pub mod manifest;
pub mod metric;
pub mod path;
pub mod regions;
pub mod rubric;

#[cfg(feature = "engine")]
pub mod cases;
#[cfg(feature = "engine")]
pub mod compare;
#[cfg(feature = "engine")]
pub mod data;
pub mod directives;
pub mod files;
#[cfg(feature = "engine")]
pub mod workbook;
