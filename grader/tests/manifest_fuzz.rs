//! Every manifest the validator accepts can be run: generated manifests (the five real ones with
//! parameters, lengths, dtypes, distributions and repeats mutated at random, seeded) either fail
//! validation with a file and a message, or generate their data and compute their reference outputs
//! without a panic.

use std::path::PathBuf;

use grader::exercise::manifest::{self, MAX_ELEMENTS};
use grader::exercise::{data, reference};
use rand::{Rng, SeedableRng};

fn real_manifests() -> Vec<(String, String)> {
    let root = crate::repo().join("exercises");
    let mut all: Vec<(String, String)> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("exercise.toml").is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path().join("exercise.toml")).unwrap(),
            )
        })
        .collect();
    all.sort();
    all
}

const INTS: &[i64] = &[
    -200,
    -1,
    0,
    1,
    2,
    7,
    255,
    256,
    1000,
    1 << 20,
    1 << 31,
    (1 << 31) + 1,
    i64::MAX,
];
const FLOATS: &[f64] = &[
    -1e300,
    -2.0,
    -0.0,
    0.0,
    0.5,
    1.0,
    3.0e38,
    1e300,
    f64::NAN,
    f64::INFINITY,
];

fn pick<T: Copy>(rng: &mut impl Rng, from: &[T]) -> T {
    from[rng.random_range(0..from.len())]
}

/// One random change to the manifest's TOML.
fn mutate(doc: &mut toml::Table, rng: &mut impl Rng) {
    let params: Vec<String> = doc["bench"]["params"]
        .as_table()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    match rng.random_range(0..7) {
        0 | 1 => {
            // A parameter of a case, or of the bench.
            let cases = doc.get_mut("case").and_then(|c| c.as_array_mut()).unwrap();
            let i = rng.random_range(0..=cases.len());
            let table = if i == cases.len() {
                doc.get_mut("bench").unwrap()
            } else {
                &mut cases[i]
            };
            let p = table["params"].as_table_mut().unwrap();
            let key = params[rng.random_range(0..params.len())].clone();
            p.insert(key, toml::Value::Integer(pick(rng, INTS)));
        }
        2 => {
            let key = if rng.random_bool(0.5) {
                "inputs"
            } else {
                "outputs"
            };
            let bufs = doc.get_mut(key).unwrap().as_array_mut().unwrap();
            let i = rng.random_range(0..bufs.len());
            let expr = match rng.random_range(0..3) {
                0 => pick(rng, INTS).to_string(),
                1 => params[rng.random_range(0..params.len())].clone(),
                _ => format!("{} * nosuch", params[0]),
            };
            bufs[i]
                .as_table_mut()
                .unwrap()
                .insert("len".into(), toml::Value::String(expr));
        }
        3 => {
            let bufs = doc.get_mut("inputs").unwrap().as_array_mut().unwrap();
            let i = rng.random_range(0..bufs.len());
            bufs[i].as_table_mut().unwrap().insert(
                "dtype".into(),
                toml::Value::String(pick(rng, &["f32", "f64", "i32", "u32"]).into()),
            );
        }
        4 => {
            let bufs = doc.get_mut("inputs").unwrap().as_array_mut().unwrap();
            let i = rng.random_range(0..bufs.len());
            let mut dist = toml::Table::new();
            if rng.random_bool(0.5) {
                dist.insert("kind".into(), "uniform".into());
                dist.insert("lo".into(), toml::Value::Float(pick(rng, FLOATS)));
                dist.insert("hi".into(), toml::Value::Float(pick(rng, FLOATS)));
            } else {
                dist.insert("kind".into(), "integers".into());
                dist.insert("lo".into(), toml::Value::Integer(pick(rng, INTS)));
                dist.insert("hi".into(), toml::Value::Integer(pick(rng, INTS)));
            }
            bufs[i]
                .as_table_mut()
                .unwrap()
                .insert("dist".into(), toml::Value::Table(dist));
        }
        5 => {
            doc["bench"]
                .as_table_mut()
                .unwrap()
                .insert("repeat".into(), toml::Value::Integer(pick(rng, &[0, 1, 3])));
        }
        _ => {
            let cases = doc.get_mut("case").and_then(|c| c.as_array_mut()).unwrap();
            let i = rng.random_range(0..cases.len());
            cases[i].as_table_mut().unwrap().insert(
                "seed".into(),
                toml::Value::Integer(rng.random_range(0..i64::MAX)),
            );
        }
    }
}

/// Mutations per real manifest: `CUDABUGS_FUZZ`, else 200 at full depth (`CUDABUGS_TESTS=full`,
/// CI's second pass) and 20 at quick, which keeps `cargo test` quick (200 on one thread took 94 s
/// of a 2-core machine's test run).
fn mutations() -> usize {
    std::env::var("CUDABUGS_FUZZ")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(match grader::environment::TestDepth::from_env() {
            grader::environment::TestDepth::Quick => 20,
            grader::environment::TestDepth::Full => 200,
        })
}

/// What one real manifest's mutations came to: accepted, rejected, cases run.
fn fuzz_one(id: &str, text: &str, count: usize) -> (usize, usize, usize) {
    // Each manifest its own seeded stream, so that the manifests run side by side and each run
    // generates the same files.
    let seed = id.bytes().fold(20261122u64, |h, b| {
        h.wrapping_mul(31).wrapping_add(u64::from(b))
    });
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (mut accepted, mut rejected, mut ran) = (0, 0, 0);
    for _ in 0..count {
        let mut doc: toml::Table = text.parse().unwrap();
        for _ in 0..rng.random_range(1..4) {
            mutate(&mut doc, &mut rng);
        }
        let mutated = toml::to_string(&doc).unwrap();
        let path = PathBuf::from("exercises").join(id).join("exercise.toml");
        let m = match manifest::parse(id, &path, &mutated) {
            Err(e) => {
                rejected += 1;
                assert_eq!(e.path, path, "the error names the file");
                assert!(!e.message.is_empty());
                continue;
            }
            Ok(m) => m,
        };
        accepted += 1;
        let m = &m.manifest;
        let f = reference::lookup(m.reference.get_ref()).unwrap();
        for c in &m.cases {
            let sizes: Vec<usize> = m
                .inputs
                .iter()
                .chain(&m.outputs)
                .map(|b| manifest::eval_len(b.len.get_ref(), &c.params).unwrap())
                .collect();
            assert!(sizes.iter().all(|&n| n <= MAX_ELEMENTS));
            // Large accepted cases run the same code; the test keeps to sizes that run fast.
            if sizes.iter().sum::<usize>() > 1 << 16 {
                continue;
            }
            let result = std::panic::catch_unwind(|| {
                let inputs = data::generate(&m.inputs, &c.params, c.seed);
                let outputs = f(&c.params, &inputs);
                for (spec, got) in m.outputs.iter().zip(&outputs) {
                    assert_eq!(
                        got.data.len(),
                        manifest::eval_len(spec.len.get_ref(), &c.params).unwrap(),
                        "output `{}` has its declared length",
                        spec.name
                    );
                }
            });
            assert!(
                result.is_ok(),
                "{id}: accepted but case `{}` panicked:\n{mutated}",
                c.name
            );
            ran += 1;
        }
    }
    (accepted, rejected, ran)
}

#[test]
fn every_generated_manifest_is_rejected_with_a_message_or_runs() {
    let manifests = real_manifests();
    let count = mutations();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let totals = std::sync::Mutex::new((0, 0, 0));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((id, text)) = manifests.get(k) else {
                    break;
                };
                let (a, r, n) = fuzz_one(id, text, count);
                let mut t = totals.lock().unwrap();
                *t = (t.0 + a, t.1 + r, t.2 + n);
            });
        }
    });
    let (accepted, rejected, ran) = totals.into_inner().unwrap();
    eprintln!("generated manifests: {accepted} accepted ({ran} cases run), {rejected} rejected");
    assert!(
        accepted > 50 && rejected > 50,
        "the generator should exercise both sides: {accepted} accepted, {rejected} rejected"
    );
}
