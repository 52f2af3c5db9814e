//! The engine: the context and its settings, plans of typed stages, the one scheduler that runs
//! them (with its reruns and the measurements kept between checks), what a tool found, and the
//! evidence a timed run leaves. It knows no judge and no plan: those sit after it.

pub mod config;
pub mod context;
pub mod events;
pub mod evidence;
pub mod findings;
pub mod gpu_share;
pub mod kept;
pub mod pace;
pub mod plan;
pub mod rerun;
pub mod scheduler;
pub mod stages;
pub mod timer;
