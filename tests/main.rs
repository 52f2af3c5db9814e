//! The package's integration tests, one binary. `cargo test` runs test binaries one after another,
//! each until its slowest test ends, so with a binary per file a 2-core machine sat idle at every
//! file's tail (14% of the tests' time) and linked eight binaries; in one, both cores stay busy
//! across the files (README, "Tests and house rules").

mod common;

mod build_cache;
mod capability;
mod cli;
mod events;
mod grade;
mod learner;
mod replay;
mod sanitize;
