//! An exercise's seeded cases: inputs written once for the harness (readable by every submission),
//! expected outputs kept in memory (never on disk, where a submission could read them).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::exercise::data;
use crate::exercise::manifest::Case;
use crate::exercise::reference::{self, Buffer};
use crate::exercise::workbook::Exercise;

#[derive(Debug, Clone)]
pub struct PreparedCase {
    pub name: String,
    pub input: PathBuf,
    pub expected: Vec<Buffer>,
    pub sanitize: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Cases {
    pub cases: Vec<PreparedCase>,
    pub bench_input: PathBuf,
}

/// Generate every case's inputs, write them for the harness into `dir` and compute the expected
/// outputs with the Rust reference.
pub fn prepare(ex: &Exercise, dir: &Path) -> std::io::Result<Cases> {
    let m = &ex.manifest.manifest;
    let cases = prepare_list(ex, dir, "case", &m.cases)?.cases;
    // The bench input is large (64 MB for 03-race) and needs no expected output: it is written once
    // per content, under a name that carries what it is made from.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&format!("{:?}{:?}{:?}{}", m.inputs, m.outputs, m.bench.params, m.bench.seed), &mut hasher);
    let bench_input = dir.join(format!("bench-{:016x}.in", std::hash::Hasher::finish(&hasher)));
    if !bench_input.is_file() {
        let inputs = data::generate(&m.inputs, &m.bench.params, m.bench.seed);
        let tmp = bench_input.with_extension(format!("in.{}.tmp", std::process::id()));
        data::write_case(&tmp, &m.bench.params, &inputs, &m.outputs)?;
        std::fs::rename(&tmp, &bench_input)?;
    }
    Ok(Cases { cases, bench_input })
}

/// Write the inputs of `list` (files `<prefix><i>.in` in `dir`) and compute their expected outputs.
/// No bench input: `grade`'s hidden and fresh cases are only run for correctness.
pub fn prepare_list(ex: &Exercise, dir: &Path, prefix: &str, list: &[Case]) -> std::io::Result<Cases> {
    std::fs::create_dir_all(dir)?;
    let m = &ex.manifest.manifest;
    let reference = reference::lookup(m.reference.get_ref()).expect("validated manifest");
    let cases = list
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let inputs = data::generate(&m.inputs, &c.params, c.seed);
            let input = dir.join(format!("{prefix}{i}.in"));
            // Written aside and renamed: another worker (grade's, one per GPU) may be reading it.
            let tmp = dir.join(format!("{prefix}{i}.in.{}.{:?}.tmp", std::process::id(), std::thread::current().id()).replace(['(', ')'], ""));
            data::write_case(&tmp, &c.params, &inputs, &m.outputs)?;
            std::fs::rename(&tmp, &input)?;
            Ok(PreparedCase { name: c.name.clone(), input, expected: reference(&c.params, &inputs), sanitize: c.sanitize })
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    Ok(Cases { cases, bench_input: PathBuf::new() })
}

/// Where a run writes a case's outputs: in the submission's own folder.
pub fn output_path(out_dir: &Path, case: usize, tag: &str) -> PathBuf {
    out_dir.join(format!("case{case}.{tag}.out"))
}

/// Harness arguments for the cases `which` selects: `[--poison] IN OUT [IN OUT ...]`, and the
/// output files in order.
pub fn harness_args(cases: &Cases, which: impl Fn(&PreparedCase) -> bool, poison: bool, out_dir: &Path, tag: &str) -> (Vec<OsString>, Vec<PathBuf>) {
    let mut args: Vec<OsString> = if poison { vec!["--poison".into()] } else { Vec::new() };
    let mut outputs = Vec::new();
    for (i, c) in cases.cases.iter().enumerate().filter(|(_, c)| which(c)) {
        let out = output_path(out_dir, i, tag);
        args.push(c.input.clone().into());
        args.push(out.clone().into());
        outputs.push(out);
    }
    (args, outputs)
}
