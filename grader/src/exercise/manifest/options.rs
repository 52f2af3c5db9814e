//! The compute-sanitizer options an `[expect]` may pass to its tool: an allow-list, per tool.

use super::Tool;

/// The compute-sanitizer options a manifest may pass (2025.3.1's `--help`), per tool, and the
/// values each takes: the modes made for one class of bug. Options that change what a record
/// means for the grader (`--print-limit`, `--xml`, `--racecheck-report`) are not among them.
pub const SANITIZER_OPTIONS: &[(Tool, &str, OptionValue)] = &[
    (
        Tool::Memcheck,
        "--leak-check",
        OptionValue::OneOf(&["full", "no"]),
    ),
    (
        Tool::Memcheck,
        "--track-stream-ordered-races",
        OptionValue::OneOf(&["all", "use-before-alloc", "use-after-free", "no"]),
    ),
    (
        Tool::Memcheck,
        "--check-bulk-copy",
        OptionValue::OneOf(&["yes", "no"]),
    ),
    (
        Tool::Memcheck,
        "--check-device-heap",
        OptionValue::OneOf(&["yes", "no"]),
    ),
    (
        Tool::Memcheck,
        "--report-api-errors",
        OptionValue::OneOf(&["all", "explicit", "no"]),
    ),
    (Tool::Memcheck, "--padding", OptionValue::Number),
    (
        Tool::Racecheck,
        "--racecheck-deadlock-timeout",
        OptionValue::Number,
    ),
    (
        Tool::Racecheck,
        "--racecheck-continue-on-deadlock",
        OptionValue::OneOf(&["yes", "no"]),
    ),
    (
        Tool::Racecheck,
        "--racecheck-memcpy-async",
        OptionValue::OneOf(&["yes", "no"]),
    ),
    (
        Tool::Racecheck,
        "--racecheck-detect-level",
        OptionValue::OneOf(&["info", "warn", "error"]),
    ),
    (
        Tool::Racecheck,
        "--check-bulk-copy",
        OptionValue::OneOf(&["yes", "no"]),
    ),
    (Tool::Initcheck, "--track-unused-memory", OptionValue::Flag),
    (
        Tool::Initcheck,
        "--unused-memory-threshold",
        OptionValue::Number,
    ),
    (
        Tool::Initcheck,
        "--check-api-memory-access",
        OptionValue::OneOf(&["yes", "no"]),
    ),
    (
        Tool::Synccheck,
        "--missing-barrier-init-is-fatal",
        OptionValue::OneOf(&["yes", "no"]),
    ),
];

/// What follows an option in `options`: nothing, one of some words, or a whole number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionValue {
    Flag,
    OneOf(&'static [&'static str]),
    Number,
}

/// Why a manifest's `options` cannot go to its tool; the error names the item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    #[error("option `{option}` is not one the grader passes to {tool} (it takes: {}; write a value as its own item, `[\"--leak-check\", \"full\"]`)", allowed(.tool))]
    NotAllowed { option: String, tool: Tool },
    /// The option is allowed, but for other tools (`owners`) than this one.
    #[error("option `{option}` belongs to {}, not {tool}", .owners.join(" and "))]
    OtherTools {
        option: String,
        tool: Tool,
        owners: Vec<&'static str>,
    },
    #[error("option `{option}` takes one of {} as the next item, got {got}", .words.join("|"))]
    NotOneOf {
        option: String,
        words: &'static [&'static str],
        got: NextItem,
    },
    #[error("option `{option}` takes a whole number as the next item, got {got}")]
    NotANumber { option: String, got: NextItem },
}

/// The item after an option that needs a value, as an error quotes it: `` `it` `` or `nothing`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextItem(pub Option<String>);

impl std::fmt::Display for NextItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(item) => write!(f, "`{item}`"),
            None => f.write_str("nothing"),
        }
    }
}

/// The options `tool` takes, comma-separated.
fn allowed(tool: &Tool) -> String {
    SANITIZER_OPTIONS
        .iter()
        .filter(|(t, _, _)| t == tool)
        .map(|(_, n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Check `options` for `tool`: each option on the allow-list for that tool, followed by a value
/// where it takes one (as separate items: `["--leak-check", "full"]`). The error says which item.
pub fn check_options(tool: Tool, options: &[String]) -> Result<(), OptionError> {
    let mut items = options.iter();
    while let Some(option) = items.next() {
        let Some((_, _, value)) = SANITIZER_OPTIONS
            .iter()
            .find(|(t, name, _)| *t == tool && name == option)
        else {
            let owners = SANITIZER_OPTIONS
                .iter()
                .filter(|(_, name, _)| name == option)
                .map(|(t, _, _)| t.name())
                .collect::<Vec<_>>();
            let option = option.clone();
            return Err(if owners.is_empty() {
                OptionError::NotAllowed { option, tool }
            } else {
                OptionError::OtherTools {
                    option,
                    tool,
                    owners,
                }
            });
        };
        match value {
            OptionValue::Flag => {}
            OptionValue::OneOf(words) => match items.next() {
                Some(v) if words.contains(&v.as_str()) => {}
                got => {
                    return Err(OptionError::NotOneOf {
                        option: option.clone(),
                        words,
                        got: NextItem(got.cloned()),
                    })
                }
            },
            OptionValue::Number => match items.next() {
                Some(v) if v.parse::<u32>().is_ok() => {}
                got => {
                    return Err(OptionError::NotANumber {
                        option: option.clone(),
                        got: NextItem(got.cloned()),
                    })
                }
            },
        }
    }
    Ok(())
}
