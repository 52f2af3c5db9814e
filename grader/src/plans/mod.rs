//! The plans: `check`, `verify`, `sanitize` and `grade`, each a builder of phases that one session
//! runs (`session`), and a fold of what they left into its report through the judges' verdicts.

pub mod check;
pub mod grade;
pub mod sanitize;
pub mod session;
pub mod staged;
pub mod timed;
pub mod verify;
