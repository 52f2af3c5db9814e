//! Every environment variable cudabugs reads, named here and read only through here: one table
//! of what each does. `engine::config` turns the run settings among them into a `Config`; the rest
//! (where the workbook, the tools and the build cache are, test seams, what a sandboxed program or
//! nvcc inherits) are read where their decision is made, through the functions below.
//!
//! | variable | read by | what it does |
//! |---|---|---|
//! | `CUDABUGS_ROOT` | `exercise::workbook::find_root` | the workbook, wherever the command runs |
//! | `CUDABUGS_NVCC`, `CUDABUGS_COMPUTE_SANITIZER`, `CUDABUGS_NCU`, `CUDABUGS_CUOBJDUMP`, `CUDABUGS_OBJDUMP` | `tools::toolchain` | a tool's path, before any other place |
//! | `CUDA_HOME`, `CUDA_PATH` | `tools::toolchain` | a toolkit's folder (`bin/` under it) |
//! | `CUDABUGS_BUILD_CACHE` | `tools::nvcc` | where built binaries are kept (tests share one) |
//! | `CUDABUGS_BUILD_LOG` | `tools::nvcc` | a file that gets a line for every nvcc that ran |
//! | `CUDABUGS_FAKE_GPU` | `tools::gpu` | a test seam: the GPU `probe` reports, with no driver |
//! | `CUDABUGS_TESTS` | the tests (`TestDepth`) | `full`: every catalog-wide scan and every nvcc half of a replayed plan; unset or `quick`: a sample |
//! | `CUDABUGS_SECRET_SEED` | the `grade` command | the hidden cases' secret, as a number |
//! | `CUDA_VISIBLE_DEVICES` | `plans::grade::class` | the GPUs `grade` spreads its workers over |
//! | `CUDABUGS_TIMEOUT_SECS`, `CUDABUGS_SANITIZER_JOBS`, `CUDABUGS_NCU_JOBS`, `CUDABUGS_ISOLATION`, `CUDABUGS_MEMORY_MAX_MB`, `CUDABUGS_SANDBOX_UID`, `CUDABUGS_SANDBOX_GID`, `CUDABUGS_NO_INSTALL`, `CUDABUGS_GRADE_LANES`, `CUDABUGS_STUB_COMPILER`, `CUDABUGS_TIMED_CORES` | `engine::config` | run settings (`Config::from_env`) |
//! | `PATH`, `LD_LIBRARY_PATH`, the `CUDA_`/`NVIDIA_` device and debugging switches | `engine::stages` | passed through to sandboxed programs (`PASSED_THROUGH`) |
//! | `CARGO` | the `book` command | the cargo that runs it, to build the book's tool |
//! | the whole environment | `tools::nvcc` | what nvcc inherits, less what would change its output |

use std::ffi::OsString;
use std::path::PathBuf;

pub const ROOT: &str = "CUDABUGS_ROOT";
pub const CUDA_HOMES: [&str; 2] = ["CUDA_HOME", "CUDA_PATH"];
pub const BUILD_CACHE: &str = "CUDABUGS_BUILD_CACHE";
pub const BUILD_LOG: &str = "CUDABUGS_BUILD_LOG";
pub const FAKE_GPU: &str = "CUDABUGS_FAKE_GPU";
pub const SECRET_SEED: &str = "CUDABUGS_SECRET_SEED";
pub const VISIBLE_DEVICES: &str = "CUDA_VISIBLE_DEVICES";
pub const CARGO: &str = "CARGO";
pub const TESTS: &str = "CUDABUGS_TESTS";

/// How deep the test suite goes. `cargo test` is quick: the scans that compile or render the
/// whole catalog take a sample, and a replayed plan runs on the stub compiler alone.
/// `CUDABUGS_TESTS=full` (CI's second pass) runs every file through nvcc, every page through the
/// browser. Real nvcc is what costs: one compile is about 3 s of a 2-core machine, and the full
/// suite compiles some 400.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestDepth {
    Quick,
    Full,
}

impl TestDepth {
    /// The depth `CUDABUGS_TESTS` asks for; a value that is neither `quick` nor `full` stops the
    /// test that asked, rather than quietly running less than was meant.
    pub fn from_env() -> TestDepth {
        match text(TESTS).as_deref() {
            None | Some("" | "quick") => TestDepth::Quick,
            Some("full") => TestDepth::Full,
            Some(other) => panic!("{TESTS}={other}: the test depth is `quick` or `full`"),
        }
    }

    /// `items` at full depth; at quick depth `keep` of them, spread evenly from the first to the
    /// last, so that a sample still reaches both ends of the catalog. The test names what it left
    /// out, so that a quick pass never reads as the whole.
    pub fn sample<T>(self, test: &str, items: Vec<T>, keep: usize) -> Vec<T> {
        let total = items.len();
        if self == TestDepth::Full || total <= keep {
            return items;
        }
        let picked: std::collections::BTreeSet<usize> = match keep {
            0 => Default::default(),
            1 => [0].into(),
            _ => (0..keep).map(|i| i * (total - 1) / (keep - 1)).collect(),
        };
        eprintln!(
            "SAMPLED {test}: {} of {total} ({TESTS}=full runs all)",
            picked.len()
        );
        items
            .into_iter()
            .enumerate()
            .filter(|(i, _)| picked.contains(i))
            .map(|(_, item)| item)
            .collect()
    }
}

/// A variable's value, where it is set and is text.
pub fn text(var: &str) -> Option<String> {
    std::env::var(var).ok()
}

/// A variable's value as a path, where it is set.
pub fn path(var: &str) -> Option<PathBuf> {
    std::env::var_os(var).map(PathBuf::from)
}

/// Whether a variable is set, to anything.
pub fn is_set(var: &str) -> bool {
    std::env::var_os(var).is_some()
}

/// The whole environment, for a child that inherits it (filtered by the caller).
pub fn all() -> Vec<(OsString, OsString)> {
    std::env::vars_os().collect()
}

#[cfg(test)]
mod tests {
    use super::TestDepth;

    #[test]
    fn a_quick_sample_spreads_from_the_first_to_the_last() {
        let all: Vec<u32> = (0..10).collect();
        assert_eq!(TestDepth::Quick.sample("t", all.clone(), 4), [0, 3, 6, 9]);
        assert_eq!(TestDepth::Quick.sample("t", all.clone(), 1), [0]);
        assert_eq!(TestDepth::Quick.sample("t", all.clone(), 20), all);
        assert_eq!(TestDepth::Full.sample("t", all.clone(), 2), all);
    }

    /// The one place stays one: no other source file of the engine or the command line reads the
    /// environment itself (tests set and read it as they need).
    #[test]
    fn nothing_else_reads_the_environment() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut readers = Vec::new();
        let mut dirs = vec![root.join("src"), root.join("../src")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") || path.ends_with("environment.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                // A file's own unit tests may set what they test.
                let code = text.split("#[cfg(test)]").next().unwrap_or_default();
                for read in ["env::var(", "env::var_os(", "env::vars_os(", "env::vars("] {
                    if code.contains(read) {
                        readers.push(format!("{} ({read})", path.display()));
                    }
                }
            }
        }
        assert!(
            readers.is_empty(),
            "read the environment through grader::environment: {readers:?}"
        );
    }
}
