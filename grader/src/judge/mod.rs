//! The judges: what the engine's outputs mean. `verdict` the steps and statuses every report is
//! made of, `speed` the speed judge, `perf` the performance track (`recorded_call` its
//! call-clocked metrics' source), `tool_aware` the source rules.

pub mod perf;
pub mod reach;
pub mod recorded_call;
pub mod speed;
pub mod tool_aware;
pub mod verdict;
