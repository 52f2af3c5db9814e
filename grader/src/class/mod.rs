//! A class: its submissions on disk (`roster`; each student's id in `ids`), what a submission may
//! change (`tamper`), the instructor's hidden cases (`secret`) and the durable record of what has
//! been graded (`journal`).
//! `plans::grade` is the plan that grades them; `report::gradebook` writes the results.

mod ids;
pub mod journal;
pub mod roster;
pub mod secret;
pub mod tamper;
