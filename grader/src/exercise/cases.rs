//! An exercise's seeded cases: inputs written once for the harness (in a folder hidden from every
//! run, which gets the files of its own command line as open descriptors), expected outputs kept
//! in memory (never on disk, where a submission could read them).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::exercise::data;
use crate::exercise::manifest::Case;
use crate::exercise::reference::{self, Buffer};
use crate::exercise::workbook::Exercise;

/// Where an exercise's case files are written (`Workbook::cases_dir`).
pub fn dir(wb: &crate::exercise::workbook::Workbook, ex: &Exercise) -> PathBuf {
    wb.cases_dir(ex)
}

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
    /// The bench's inputs, written for the harness (which reads only its layout when the grader
    /// serves the timed calls).
    pub bench_input: PathBuf,
    /// The secret the timed calls are drawn with (`tools::served`): every version timed with
    /// these cases gets the same calls, and no program knows them beforehand.
    pub call_secret: u64,
    /// The bench's inputs in memory, read once from `bench_input` by the first timed run.
    bench_data: Arc<OnceLock<Option<Arc<Vec<Buffer>>>>>,
}

impl Cases {
    /// The cases `list`, timed (if ever) on another set's bench.
    pub fn with_bench_of(list: Vec<PreparedCase>, bench: &Cases) -> Cases {
        Cases {
            cases: list,
            ..bench.clone()
        }
    }

    /// The bench's inputs (None where they cannot be read).
    pub fn bench_data(&self) -> Option<Arc<Vec<Buffer>>> {
        self.bench_data
            .get_or_init(|| data::read_inputs(&self.bench_input).ok().map(Arc::new))
            .clone()
    }
}

/// Generate every case's inputs, write them for the harness into `dir` and compute the expected
/// outputs with the Rust reference. The bench and its calls are the manifest's seed's (`verify`);
/// `check` and `grade` then choose inputs the program cannot predict (`prepare_with`).
pub fn prepare(ex: &Exercise, dir: &Path) -> std::io::Result<Cases> {
    let seed = ex.manifest.manifest.bench.seed;
    prepare_with(ex, dir, seed, seed)
}

/// The cases, with the bench drawn with `bench_seed` and its timed calls with `call_secret`.
pub fn prepare_with(
    ex: &Exercise,
    dir: &Path,
    bench_seed: u64,
    call_secret: u64,
) -> std::io::Result<Cases> {
    let cases = prepare_list(ex, dir, "case", &ex.manifest.manifest.cases)?.cases;
    let bench_input = bench(ex, dir, bench_seed)?;
    Ok(Cases {
        cases,
        bench_input,
        call_secret,
        bench_data: Arc::default(),
    })
}

/// The timed runs' base inputs: the bench drawn with `seed`, written once per content (64 MB for
/// 03-race) under a name that carries what it is made from. Each timed call changes them in ways
/// of its own (`tools::served`).
fn bench(ex: &Exercise, dir: &Path, seed: u64) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let m = &ex.manifest.manifest;
    let made_of = format!("{:?}{:?}{:?}{seed}", m.inputs, m.outputs, m.bench.params);
    let bench_input = dir.join(format!(
        "bench-{:016x}.in",
        crate::hash::stable(&[&made_of])
    ));
    if !bench_input.is_file() {
        let inputs = data::generate(&m.inputs, &m.bench.params, seed);
        let tmp = bench_input.with_extension(
            format!(
                "in.{}.{:?}.tmp",
                std::process::id(),
                std::thread::current().id()
            )
            .replace(['(', ')'], ""),
        );
        data::write_case(&tmp, &m.bench.params, &inputs, &m.outputs)?;
        std::fs::rename(&tmp, &bench_input)?;
    }
    Ok(bench_input)
}

/// A seed nobody can predict: from the operating system's random source (the clock where there
/// is none).
pub fn unpredictable_seed() -> u64 {
    use std::io::Read as _;
    let mut bytes = [0u8; 8];
    match std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)) {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0)
                ^ std::process::id() as u64
        }
    }
}

/// Write the inputs of `list` (files `<prefix><i>.in` in `dir`) and compute their expected outputs.
/// No bench input: `grade`'s hidden and fresh cases are only run for correctness.
pub fn prepare_list(
    ex: &Exercise,
    dir: &Path,
    prefix: &str,
    list: &[Case],
) -> std::io::Result<Cases> {
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
            let tmp = dir.join(
                format!(
                    "{prefix}{i}.in.{}.{:?}.tmp",
                    std::process::id(),
                    std::thread::current().id()
                )
                .replace(['(', ')'], ""),
            );
            data::write_case(&tmp, &c.params, &inputs, &m.outputs)?;
            std::fs::rename(&tmp, &input)?;
            Ok(PreparedCase {
                name: c.name.clone(),
                input,
                expected: reference(&c.params, &inputs),
                sanitize: c.sanitize,
            })
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    Ok(Cases::with_bench_of(cases, &Cases::default()))
}

/// Where a run writes a case's outputs: in the submission's own folder.
pub fn output_path(out_dir: &Path, case: usize, tag: &str) -> PathBuf {
    out_dir.join(format!("case{case}.{tag}.out"))
}

/// Harness arguments for the cases `which` selects: `[--poison] [FLAGS] IN OUT [IN OUT ...]` (the
/// manifest's `harness_flags`), and the output files in order.
pub fn harness_args(
    cases: &Cases,
    which: impl Fn(&PreparedCase) -> bool,
    poison: bool,
    flags: &[&str],
    out_dir: &Path,
    tag: &str,
) -> (Vec<OsString>, Vec<PathBuf>) {
    let mut args: Vec<OsString> = if poison {
        vec!["--poison".into()]
    } else {
        Vec::new()
    };
    args.extend(flags.iter().map(OsString::from));
    let mut outputs = Vec::new();
    for (i, c) in cases.cases.iter().enumerate().filter(|(_, c)| which(c)) {
        let out = output_path(out_dir, i, tag);
        args.push(c.input.clone().into());
        args.push(out.clone().into());
        outputs.push(out);
    }
    (args, outputs)
}
