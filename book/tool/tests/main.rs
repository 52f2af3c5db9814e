//! The book tool's integration tests, one binary (the workbook's tests/main.rs says why).

mod checks;
mod chromium;
mod numbers;
mod spoilers;
