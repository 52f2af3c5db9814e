//! Plans, the scheduler that runs them, and every verdict. `check` and `verify` are plans over the
//! same stages; they differ in which stages they ask for and in how their report is assembled.

pub mod check;
pub mod config;
pub mod context;
pub mod findings;
pub mod grade;
pub mod kept;
pub mod perf;
pub mod plan;
pub mod rerun;
pub mod sanitize;
pub mod scheduler;
pub mod speed;
pub mod stages;
pub mod tool_aware;
pub mod verdict;
pub mod verify;
