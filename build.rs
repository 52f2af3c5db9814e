//! Validates every exercise manifest (a broken one fails the build with file and line) and embeds the
//! catalog, the original exercises, the solutions and the harness in the xtask binary.
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
    "peak.cu",
    "baseline-sgemm.cu",
];

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("embed");
    // Not `exercises/`: cargo scans a watched folder recursively, and learners edit files there. A new
    // exercise always brings a new `solutions/<id>/` folder, which this catches.
    println!("cargo:rerun-if-changed=solutions");
    println!("cargo:rerun-if-changed=harness");

    let exercises = match grader::exercise::catalog::discover_each(&root) {
        Ok(list) => list,
        Err(e) => {
            eprintln!("error: cannot read the exercises\n  --> {e}");
            std::process::exit(1);
        }
    };

    let mut code =
        String::from("pub static EXERCISES: &[grader::exercise::catalog::Embedded] = &[\n");
    for (id, loaded) in &exercises {
        println!(
            "cargo:rerun-if-changed={}",
            root.join("exercises")
                .join(id)
                .join(grader::exercise::catalog::MANIFEST_FILE)
                .display()
        );
        let ex = match loaded {
            Ok(ex) => ex,
            Err(e) => {
                // One broken exercise must not stop the others: it is embedded as its error.
                println!(
                    "cargo:warning=exercise {id} is not gradable until its manifest is fixed: {e}"
                );
                writeln!(
                    code,
                    "    grader::exercise::catalog::Embedded {{ id: {id:?}, manifest: \"\", original: \"\", solution: \"\", error: Some({:?}) }},",
                    e.to_string()
                )
                .unwrap();
                continue;
            }
        };
        println!(
            "cargo:rerun-if-changed={}",
            root.join(&ex.manifest.path).display()
        );
        println!("cargo:rerun-if-changed={}", ex.solution_path.display());
        let dir = out.join(id);
        fs::create_dir_all(&dir).unwrap();
        let original = write(&ex.original, &dir.join("original.cu"));
        let solution = write(&ex.solution, &dir.join("solution.cu"));
        let manifest = copy(&root.join(&ex.manifest.path), &dir.join("exercise.toml"));
        writeln!(
            code,
            "    grader::exercise::catalog::Embedded {{ id: {id:?}, manifest: include_str!({manifest:?}), \
             original: include_str!({original:?}), solution: include_str!({solution:?}), error: None }},"
        )
        .unwrap();
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
    // The learning path: checked here so that a mistake shows at build time, and embedded as it
    // is (a malformed path never stops the build: the workbook then goes by id and says why).
    let path_file = root.join(grader::exercise::path::PATH_FILE);
    println!("cargo:rerun-if-changed={}", path_file.display());
    let path_text = fs::read_to_string(&path_file).unwrap_or_default();
    let stops: Vec<grader::exercise::path::Stop> = exercises
        .iter()
        .filter_map(|(id, loaded)| {
            let ex = loaded.as_ref().ok()?;
            Some(grader::exercise::path::Stop {
                id,
                level: ex.manifest.level(),
            })
        })
        .collect();
    if let Err(e) = grader::exercise::path::parse(&path_file, &path_text, &stops) {
        println!("cargo:warning=the learning path is by id until it is fixed: {e}");
    }
    let path_copy = write(&path_text, &out.join("path.toml"));
    writeln!(
        code,
        "\npub static PATH: &str = include_str!({path_copy:?});"
    )
    .unwrap();
    fs::write(out.join("catalog.rs"), code).unwrap();
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
    if let Err(e) = fs::copy(from, to) {
        eprintln!("error: cannot embed {}: {e}", from.display());
        std::process::exit(1);
    }
    to.display().to_string()
}
