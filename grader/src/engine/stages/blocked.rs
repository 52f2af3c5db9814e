//! Why a stage did not run: what every plan's report, score and event says of it.

/// Why a stage did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocked {
    /// The build it needs failed (and says so).
    BuildFailed,
    /// No usable GPU: the reason.
    NoGpu(String),
    /// A tool was not found: its name.
    Missing(&'static str),
    /// The stage does not apply to this target (a plan asked for it by mistake): why.
    NotApplicable(&'static str),
    /// The grader could not prepare what the stage needs (the timed calls' shared memory): why.
    Setup(String),
}

/// Why a stage did not run, in words (a step's, a score's, an event's).
impl std::fmt::Display for Blocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Blocked::Missing(t) => write!(f, "{t} not found"),
            Blocked::NoGpu(r) => f.write_str(r),
            Blocked::BuildFailed => f.write_str("its build failed"),
            Blocked::NotApplicable(why) => f.write_str(why),
            Blocked::Setup(why) => f.write_str(why),
        }
    }
}
