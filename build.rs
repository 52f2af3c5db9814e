//! Embeds the catalog (each exercise's manifest, its solution and the untouched exercise's regions),
//! the learning path and the harness in the xtask binary. It only copies: the grader parses and
//! checks them when the workbook is opened (`Exercise::from_embedded`, `Workbook::with_path`), naming
//! the file and line of a broken one, which then is "not gradable" while the others work. It
//! depends on no part of the grader, which would otherwise be compiled twice on a learner's first
//! `check`.
//!
//! The learner's `.cu` files are never read: the pristine original that `reset` restores is the
//! solution with `solutions/<id>/exercise-regions.cu` put back, so no edit, deletion, `cargo clean`
//! or rebuild can turn a learner's version into "the original".

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

const HARNESS_FILES: &[&str] = &[
    "cudabugs.cuh",
    "timeline.cuh",
    "driver.cuh",
    "harness.cu",
    "warm.cu",
    "peak.cu",
    "baseline-sgemm.cu",
];
// Which files make an exercise: the grader's own module, included rather than depended on.
#[path = "grader/src/exercise/files.rs"]
mod files;

use files::{exercise_files, exercise_ids, MANIFEST_FILE, ORIGINAL_REGIONS, PATH_FILE};

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("embed");
    // Not `exercises/`: cargo scans a watched folder recursively, and learners edit files there. A new
    // exercise always brings a new `solutions/<id>/` folder, which this catches.
    println!("cargo:rerun-if-changed=solutions");
    println!("cargo:rerun-if-changed=harness");

    let ids =
        exercise_ids(&root).unwrap_or_else(|e| fail(&format!("cannot read the exercises: {e}")));
    let mut code =
        String::from("pub static EXERCISES: &[grader::exercise::catalog::Embedded] = &[\n");
    for id in &ids {
        println!(
            "cargo:rerun-if-changed={}",
            root.join("exercises")
                .join(id)
                .join(MANIFEST_FILE)
                .display()
        );
        let dir = out.join(id);
        fs::create_dir_all(&dir).unwrap();
        match exercise_files(&root, id) {
            Ok(f) => {
                println!("cargo:rerun-if-changed={}", f.solution.display());
                println!("cargo:rerun-if-changed={}", f.regions.display());
                let manifest = copy(&f.manifest, &dir.join(MANIFEST_FILE));
                let solution = copy(&f.solution, &dir.join("solution.cu"));
                let regions = copy(&f.regions, &dir.join(ORIGINAL_REGIONS));
                let source = f.source;
                writeln!(
                    code,
                    "    grader::exercise::catalog::Embedded {{ id: {id:?}, manifest: include_str!({manifest:?}), \
                     source: {source:?}, solution: include_str!({solution:?}), regions: include_str!({regions:?}), error: None }},"
                )
                .unwrap();
            }
            Err(error) => {
                // One broken exercise must not stop the others: it is embedded as its error.
                println!("cargo:warning=exercise {id} is not gradable until it is fixed: {error}");
                writeln!(
                    code,
                    "    grader::exercise::catalog::Embedded {{ id: {id:?}, manifest: \"\", source: \"\", solution: \"\", regions: \"\", error: Some({error:?}) }},"
                )
                .unwrap();
            }
        }
    }
    code.push_str("];\n\npub static HARNESS: &[(&str, &str)] = &[\n");
    fs::create_dir_all(out.join("harness")).unwrap();
    for name in HARNESS_FILES {
        let copied = copy(
            &root.join("harness").join(name),
            &out.join("harness").join(name),
        );
        println!(
            "cargo:rerun-if-changed={}",
            root.join("harness").join(name).display()
        );
        writeln!(code, "    ({name:?}, include_str!({copied:?})),").unwrap();
    }
    code.push_str("];\n");
    // The learning path, embedded as it is: a malformed one never stops the build (the workbook then
    // goes by id and says why).
    let path_file = root.join(PATH_FILE);
    println!("cargo:rerun-if-changed={}", path_file.display());
    let path_text = fs::read_to_string(&path_file).unwrap_or_default();
    let path_copy = write(&path_text, &out.join("path.toml"));
    writeln!(
        code,
        "\npub static PATH: &str = include_str!({path_copy:?});"
    )
    .unwrap();
    write(&code, &out.join("catalog.rs"));
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1);
}

/// Write into OUT_DIR, where `include_str!` reads it.
fn write(text: &str, to: &Path) -> String {
    if fs::read_to_string(to).ok().as_deref() != Some(text) {
        fs::write(to, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", to.display()));
    }
    to.display().to_string()
}

/// Copy into OUT_DIR so that `include_str!` tracks the copy.
fn copy(from: &Path, to: &Path) -> String {
    let text = fs::read_to_string(from)
        .unwrap_or_else(|e| fail(&format!("cannot embed {}: {e}", from.display())));
    write(&text, to)
}
