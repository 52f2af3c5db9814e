//! The plans: `check`, `verify`, `sanitize` and `grade`, each asking the engine for the stages it
//! needs and assembling its report from the judges' verdicts.

pub mod check;
pub mod grade;
pub mod sanitize;
pub mod staged;
pub mod timed;
pub mod verify;
