//! The exit status of every command, decided here: what each code means is documented once (the
//! README's "Exit codes" and `book/src/json.md` say the same).

/// What a command's exit code says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExitStatus {
    /// 0: passed, or done as asked.
    Pass,
    /// 1: a check failed (a finding, wrong outputs, too slow), or a gradebook still lacks pairs.
    Fail,
    /// 2: a usage error: a bad argument or id, a workbook that cannot be read.
    Usage,
    /// 3: a tool failed (nvcc missing, the sanitizer or the profiler), or the sandbox a strict
    /// isolation asked for was refused.
    ToolError,
    /// 4: a run timed out (its process group killed), or a hang exercise's threads never got past
    /// their wait.
    Timeout,
    /// 5: not gradable: a broken or tampered exercise, or (in `grade`) one this GPU is too old for.
    NotGradable,
    /// 6: skipped for want of a GPU, or of a new enough one.
    Skipped,
    /// 7: a file of the learner's could not be written (`reset`): the message names the backup
    /// already made of their version, if one was, and what to change before trying again.
    CannotWrite,
    /// 130: stopped by Ctrl-C.
    Interrupted,
}

impl ExitStatus {
    /// Every status, in the order of their codes (the documented list; the events' schema lists
    /// the same codes, which tests/events.rs holds it to).
    pub const ALL: [ExitStatus; 9] = [
        ExitStatus::Pass,
        ExitStatus::Fail,
        ExitStatus::Usage,
        ExitStatus::ToolError,
        ExitStatus::Timeout,
        ExitStatus::NotGradable,
        ExitStatus::Skipped,
        ExitStatus::CannotWrite,
        ExitStatus::Interrupted,
    ];

    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Pass => 0,
            ExitStatus::Fail => 1,
            ExitStatus::Usage => 2,
            ExitStatus::ToolError => 3,
            ExitStatus::Timeout => 4,
            ExitStatus::NotGradable => 5,
            ExitStatus::Skipped => 6,
            ExitStatus::CannotWrite => 7,
            ExitStatus::Interrupted => 130,
        }
    }

    /// The worse of two: a batch exits with its worst pair's status (a tool error over a GPU too
    /// old over a skip; any of them over a pass).
    pub fn worst(self, other: ExitStatus) -> ExitStatus {
        let rank = |s: ExitStatus| match s {
            ExitStatus::Pass => 0,
            ExitStatus::Skipped => 1,
            ExitStatus::Fail => 2,
            ExitStatus::NotGradable => 3,
            ExitStatus::Timeout => 4,
            ExitStatus::ToolError => 5,
            ExitStatus::CannotWrite => 6,
            ExitStatus::Usage => 7,
            ExitStatus::Interrupted => 8,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(s: ExitStatus) -> std::process::ExitCode {
        std::process::ExitCode::from(s.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_codes_and_the_worst_of_a_batch() {
        assert_eq!(
            ExitStatus::ALL.map(ExitStatus::code),
            [0, 1, 2, 3, 4, 5, 6, 7, 130]
        );
        // grade: a tool error wins over a GPU too old, which wins over a skip.
        let batch = [
            ExitStatus::Skipped,
            ExitStatus::NotGradable,
            ExitStatus::Pass,
        ];
        assert_eq!(
            batch.into_iter().fold(ExitStatus::Pass, ExitStatus::worst),
            ExitStatus::NotGradable
        );
        assert_eq!(
            ExitStatus::NotGradable.worst(ExitStatus::ToolError),
            ExitStatus::ToolError
        );
    }
}
