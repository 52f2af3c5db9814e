//! The instructor's secret: a seed (`--secret-seed`, or `seed` in a file kept outside the
//! workbook) from which every exercise's hidden cases, the timed bench input and the fresh inputs
//! of the post-timing check are drawn, and extra sizes per exercise. Students see neither the seed
//! nor the hidden cases' details, only how many of them passed.
//!
//! The seed is never used directly: it becomes a 32-byte BLAKE3 key, and every case seed and the
//! fingerprint are keyed hashes of it. A fingerprint (in `class.json`, in feedback) or a case seed
//! gives back nothing about the key, nor about any other seed drawn from it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::exercise::cases::{self, Cases};
use crate::exercise::manifest::{self, Case};
use crate::exercise::workbook::Exercise;
use crate::hash::{feed, first_u64};

/// The context string of `blake3::derive_key`: a seed names a different key in any other use.
const KEY_CONTEXT: &str = "cudabugs 2026 instructor secret";
/// An extra hidden case for one exercise, from the secret file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraCase {
    pub exercise: String,
    pub name: String,
    pub params: BTreeMap<String, i64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SecretFile {
    seed: u64,
    #[serde(default, rename = "case")]
    cases: Vec<Spanned<ExtraCase>>,
}

#[derive(Clone)]
pub struct Secret {
    /// `blake3::derive_key(KEY_CONTEXT, seed)`; the seed itself is not kept.
    key: [u8; 32],
    /// The file's extra cases, each with the line (1-based) of its `[[case]]`.
    extra: Vec<(ExtraCase, usize)>,
    /// The file it came from (hidden from every sandboxed run), if any.
    pub file: Option<PathBuf>,
    /// The path as given to `load`, for messages.
    shown: Option<PathBuf>,
}

/// Never prints the key.
impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret")
            .field("fingerprint", &self.fingerprint())
            .field("extra", &self.extra)
            .field("file", &self.file)
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("{0}: {1}")]
    Read(PathBuf, std::io::Error),
    #[error("{path}:{line}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{0}: the secret file lies inside {1}, where students' code or repositories can read it; keep it outside")]
    Exposed(PathBuf, PathBuf),
}

impl Secret {
    pub fn from_seed(seed: u64) -> Secret {
        Secret {
            key: blake3::derive_key(KEY_CONTEXT, &seed.to_le_bytes()),
            extra: Vec::new(),
            file: None,
            shown: None,
        }
    }

    /// Read a secret file; refused where it lies inside one of `exposed` (the workbook, the
    /// submissions). Its cases are checked against the workbook by `problems`.
    pub fn load(path: &Path, exposed: &[&Path]) -> Result<Secret, SecretError> {
        let abs = path
            .canonicalize()
            .map_err(|e| SecretError::Read(path.to_path_buf(), e))?;
        if let Some(inside) = exposed
            .iter()
            .filter_map(|d| d.canonicalize().ok())
            .find(|d| abs.starts_with(d))
        {
            return Err(SecretError::Exposed(path.to_path_buf(), inside));
        }
        let text =
            std::fs::read_to_string(&abs).map_err(|e| SecretError::Read(path.to_path_buf(), e))?;
        let mut secret = Secret::parse(path, &text)?;
        secret.file = Some(abs);
        Ok(secret)
    }

    /// The secret file's text; `path` names it in errors.
    fn parse(path: &Path, text: &str) -> Result<Secret, SecretError> {
        let parsed: SecretFile = toml::from_str(text).map_err(|e| SecretError::Parse {
            path: path.to_path_buf(),
            line: e
                .span()
                .map(|s| manifest::line_of(text, s.start))
                .unwrap_or(1),
            message: e.message().to_string(),
        })?;
        let extra = parsed
            .cases
            .into_iter()
            .map(|c| {
                let line = manifest::line_of(text, c.span().start);
                (c.into_inner(), line)
            })
            .collect();
        Ok(Secret {
            extra,
            shown: Some(path.to_path_buf()),
            ..Secret::from_seed(parsed.seed)
        })
    }

    /// A 64-bit seed for one use: the first 8 bytes (little-endian) of the keyed BLAKE3 hash of
    /// `purpose` and `parts`, separated by 0xff. Seeds of different purposes or parts are
    /// unrelated, and none gives back the key.
    pub fn derive_seed(&self, purpose: &str, parts: &[&str]) -> u64 {
        let mut hasher = blake3::Hasher::new_keyed(&self.key);
        feed(&mut hasher, &[&[purpose], parts].concat());
        first_u64(&hasher.finalize())
    }

    /// The seed of an exercise's timed bench input.
    pub fn bench_seed(&self, ex: &Exercise) -> u64 {
        self.derive_seed("bench", &[ex.id()])
    }

    /// Names the secret without revealing it: the journal keys results to it, so a new seed (or
    /// other extra cases) grades everything again.
    pub fn fingerprint(&self) -> String {
        let extra: Vec<String> = self
            .extra
            .iter()
            .map(|(c, _)| format!("{:?}", (&c.exercise, &c.name, &c.params)))
            .collect();
        let parts: Vec<&str> = extra.iter().map(String::as_str).collect();
        format!("{:016x}", self.derive_seed("fingerprint", &parts))
    }

    /// What is wrong with the secret file's extra cases, each as `path:line: message` at its
    /// `[[case]]`: an exercise this workbook does not have, parameters the exercise does not take
    /// or outside the manifest's range, a buffer that would be empty, negative or too large, a
    /// name given twice. Such cases are never run.
    pub fn problems(&self, exercises: &[&Exercise]) -> Vec<String> {
        let path = self
            .shown
            .as_deref()
            .or(self.file.as_deref())
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "the secret".to_string());
        let mut out = Vec::new();
        for (i, (c, line)) in self.extra.iter().enumerate() {
            let problem = match exercises.iter().find(|e| e.id() == c.exercise) {
                None => Some(format!(
                    "hidden case `{}` names exercise `{}`, which this workbook does not have",
                    c.name, c.exercise
                )),
                Some(ex) => case_problem(c, ex)
                    .map(|p| format!("hidden case `{}` of {}: {p}", c.name, c.exercise)),
            };
            let problem = problem.or_else(|| {
                self.extra[..i]
                    .iter()
                    .find(|(d, _)| d.exercise == c.exercise && d.name == c.name)
                    .map(|(_, first)| {
                        format!(
                            "hidden case `{}` of {} is named twice (first at line {first})",
                            c.name, c.exercise
                        )
                    })
            });
            out.extend(problem.map(|p| format!("{path}:{line}: {p}")));
        }
        out
    }

    /// The hidden cases: every public case's sizes with a secret seed, then the file's extra sizes
    /// (those without a problem).
    pub fn hidden(&self, ex: &Exercise) -> Vec<Case> {
        let public = &ex.manifest.manifest.cases;
        let mut out: Vec<Case> = public
            .iter()
            .enumerate()
            .map(|(i, c)| Case {
                name: format!("hidden {}", i + 1),
                seed: self.derive_seed("hidden", &[ex.id(), &i.to_string()]),
                params: c.params.clone(),
                sanitize: false,
            })
            .collect();
        let mut names: Vec<&str> = Vec::new();
        for (c, _) in self
            .extra
            .iter()
            .filter(|(c, _)| c.exercise == ex.id() && case_problem(c, ex).is_none())
        {
            if names.contains(&c.name.as_str()) {
                continue;
            }
            names.push(&c.name);
            out.push(Case {
                name: format!("hidden {}", public.len() + names.len()),
                seed: self.derive_seed("extra", &[ex.id(), &c.name]),
                params: c.params.clone(),
                sanitize: false,
            });
        }
        out
    }

    /// Fresh inputs for the check after the timed runs: the public sizes, new data.
    pub fn fresh(&self, ex: &Exercise) -> Vec<Case> {
        ex.manifest
            .manifest
            .cases
            .iter()
            .enumerate()
            .map(|(i, c)| Case {
                name: format!("fresh {}", i + 1),
                seed: self.derive_seed("fresh", &[ex.id(), &i.to_string()]),
                params: c.params.clone(),
                sanitize: false,
            })
            .collect()
    }

    /// Write both sets' inputs under `dir` and compute their expected outputs.
    pub fn prepare(&self, ex: &Exercise, dir: &Path) -> std::io::Result<(Cases, Cases)> {
        let dir = dir.join(format!("secret-{}", self.fingerprint()));
        Ok((
            cases::prepare_list(ex, &dir, "hidden", &self.hidden(ex))?,
            cases::prepare_list(ex, &dir, "fresh", &self.fresh(ex))?,
        ))
    }
}

/// What keeps an extra case of `ex` from running, by the rules the manifest's own cases follow:
/// the same parameter names as `[bench]`, each within 0..=MAX_PARAM, and every buffer 1 to
/// MAX_ELEMENTS elements long.
fn case_problem(c: &ExtraCase, ex: &Exercise) -> Option<String> {
    let want: Vec<&String> = ex.manifest.manifest.bench.params.keys().collect();
    let got: Vec<&String> = c.params.keys().collect();
    if want != got {
        return Some(format!("params {got:?}, the exercise takes {want:?}"));
    }
    if let Some((name, v)) = c
        .params
        .iter()
        .find(|(_, v)| **v < 0 || **v > manifest::MAX_PARAM)
    {
        return Some(format!(
            "parameter `{name}` = {v} is outside 0..={}",
            manifest::MAX_PARAM
        ));
    }
    let man = &ex.manifest.manifest;
    man.inputs.iter().chain(&man.outputs).find_map(|b| {
        match manifest::eval_len(b.len.get_ref(), &c.params) {
            Err(msg) => Some(format!("buffer `{}`: {msg}", b.name)),
            Ok(0) => Some(format!(
                "buffer `{}` (length `{}`) would be empty",
                b.name,
                b.len.get_ref()
            )),
            Ok(l) if l > manifest::MAX_ELEMENTS => Some(format!(
                "buffer `{}` would hold {l} elements, more than {}",
                b.name,
                manifest::MAX_ELEMENTS
            )),
            Ok(_) => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PURPOSES: [&str; 4] = ["hidden", "fresh", "extra", "bench"];

    fn reduction() -> Exercise {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .join("exercises/57-reduction/exercise.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        Exercise {
            manifest: manifest::parse("57-reduction", &path, &text).unwrap(),
            original: "",
            solution: "",
        }
    }

    /// Every value a secret hands out for 57-reduction, by name.
    fn derived(s: &Secret, ex: &Exercise) -> Vec<(String, u64)> {
        let mut out: Vec<(String, u64)> = s
            .hidden(ex)
            .into_iter()
            .chain(s.fresh(ex))
            .map(|c| (c.name, c.seed))
            .collect();
        out.push(("bench".into(), s.bench_seed(ex)));
        out.push((
            "fingerprint".into(),
            u64::from_str_radix(&s.fingerprint(), 16).unwrap(),
        ));
        out
    }

    /// Write `text` as a secret file in a temporary folder and load it.
    fn load(text: &str) -> (tempfile::TempDir, PathBuf, Secret) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.toml");
        std::fs::write(&path, text).unwrap();
        let secret = Secret::load(&path, &[]).unwrap();
        (dir, path, secret)
    }

    #[test]
    fn seeds_one_bit_apart_give_unrelated_case_seeds_and_fingerprints() {
        let ex = reduction();
        let base: u64 = 0x5eed_c0de_2026_0001;
        for bit in [0, 1, 17, 32, 63] {
            let (a, b) = (
                Secret::from_seed(base),
                Secret::from_seed(base ^ (1 << bit)),
            );
            let (da, db) = (derived(&a, &ex), derived(&b, &ex));
            assert_eq!(da.len(), db.len());
            let mut xors = Vec::new();
            for ((name, x), (_, y)) in da.iter().zip(&db) {
                let distance = (x ^ y).count_ones();
                assert!(
                    (16..=48).contains(&distance),
                    "bit {bit}, {name}: {x:016x} and {y:016x} differ in {distance} bits"
                );
                xors.push(x ^ y);
            }
            for p in PURPOSES {
                let (x, y) = (
                    a.derive_seed(p, &["57-reduction", "other"]),
                    b.derive_seed(p, &["57-reduction", "other"]),
                );
                assert!(
                    (16..=48).contains(&(x ^ y).count_ones()),
                    "bit {bit}, purpose {p}"
                );
                xors.push(x ^ y);
            }
            // No XOR difference repeats across purposes or parts: flipping a bit of the seed does
            // not flip a fixed pattern of the outputs.
            let mut unique = xors.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(
                unique.len(),
                xors.len(),
                "bit {bit}: a XOR relation repeats"
            );
        }
        // Purposes are separated: the same parts give unrelated seeds under two labels.
        let s = Secret::from_seed(base);
        let per: Vec<u64> = PURPOSES
            .iter()
            .map(|p| s.derive_seed(p, &["57-reduction", "0"]))
            .collect();
        for (i, x) in per.iter().enumerate() {
            for y in &per[i + 1..] {
                assert!((16..=48).contains(&(x ^ y).count_ones()));
            }
        }
    }

    #[test]
    fn the_derivation_is_the_specified_keyed_blake3_and_deterministic() {
        let ex = reduction();
        let (a, b) = (Secret::from_seed(7), Secret::from_seed(7));
        assert_eq!(derived(&a, &ex), derived(&b, &ex));
        assert_eq!(derived(&a, &ex), derived(&a, &ex));
        assert_ne!(derived(&a, &ex), derived(&Secret::from_seed(8), &ex));
        assert_eq!(a.fingerprint().len(), 16);
        // The key and the message, as documented.
        let key = blake3::derive_key("cudabugs 2026 instructor secret", &7u64.to_le_bytes());
        let want = blake3::keyed_hash(&key, b"hidden\xff57-reduction\xff0");
        assert_eq!(
            a.hidden(&ex)[0].seed,
            u64::from_le_bytes(want.as_bytes()[..8].try_into().unwrap())
        );
        let want = blake3::keyed_hash(&key, b"bench\xff57-reduction");
        assert_eq!(
            a.bench_seed(&ex),
            u64::from_le_bytes(want.as_bytes()[..8].try_into().unwrap())
        );
        // Parts are not confused by where the separator falls.
        assert_ne!(
            a.derive_seed("x", &["ab", "c"]),
            a.derive_seed("x", &["a", "bc"])
        );
        assert_ne!(a.derive_seed("x", &["a"]), a.derive_seed("x", &["a", ""]));
        // The key is not printed.
        let shown = format!("{a:?}");
        assert!(
            !shown.contains("key") && !shown.contains(&format!("{key:?}")[1..20]),
            "{shown}"
        );
        // A file with the same seed and extra cases: the same seeds for the public sizes, another
        // fingerprint, and the extra case after them.
        let (_dir, _, file) = load("seed = 7\n\n[[case]]\nexercise = \"57-reduction\"\nname = \"big\"\nparams = { n = 3000000 }\n");
        assert_eq!(
            file.fresh(&ex).iter().map(|c| c.seed).collect::<Vec<_>>(),
            a.fresh(&ex).iter().map(|c| c.seed).collect::<Vec<_>>()
        );
        assert_ne!(file.fingerprint(), a.fingerprint());
        let hidden = file.hidden(&ex);
        assert_eq!(hidden.len(), ex.manifest.manifest.cases.len() + 1);
        assert_eq!(
            hidden.last().unwrap().seed,
            a.derive_seed("extra", &["57-reduction", "big"])
        );
    }

    #[test]
    fn a_negative_size_is_a_problem_at_its_case_line_and_never_runs() {
        let ex = reduction();
        let text = "seed = 11\n\n[[case]]\nexercise = \"57-reduction\"\nname = \"fine\"\nparams = { n = 12 }\n\n[[case]]\nexercise = \"57-reduction\"\nname = \"negative\"\nparams = { n = -5 }\n";
        let (_dir, path, secret) = load(text);
        let problems = secret.problems(&[&ex]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with(&format!("{}:8: ", path.display())),
            "{}",
            problems[0]
        );
        assert!(
            problems[0].contains("`negative`") && problems[0].contains("-5"),
            "{}",
            problems[0]
        );
        let hidden = secret.hidden(&ex);
        assert_eq!(hidden.len(), ex.manifest.manifest.cases.len() + 1);
        assert!(hidden.iter().all(|c| c.params["n"] > 0));
    }

    #[test]
    fn unknown_exercises_wrong_params_and_bad_sizes_are_problems_at_their_lines() {
        let ex = reduction();
        let case = |exercise: &str, name: &str, params: &str| {
            format!("\n[[case]]\nexercise = \"{exercise}\"\nname = \"{name}\"\nparams = {{ {params} }}\n")
        };
        let text = [
            "seed = 3\n".to_string(),
            case("99-nothing", "lost", "n = 4"), // [[case]] at line 3
            case("57-reduction", "wrong", "m = 4"), // 8
            case("57-reduction", "two", "n = 4, m = 2"), // 13
            case("57-reduction", "empty", "n = 0"), // 18
            case("57-reduction", "huge", "n = 2000000000"), // 23
            case("57-reduction", "fine", "n = 4"), // 28
            case("57-reduction", "fine", "n = 5"), // 33
        ]
        .concat();
        let (_dir, path, secret) = load(&text);
        let problems = secret.problems(&[&ex]);
        let at = |line: usize, words: &[&str]| {
            let p = problems
                .iter()
                .find(|p| p.starts_with(&format!("{}:{line}: ", path.display())))
                .unwrap_or_else(|| panic!("no problem at line {line}: {problems:?}"));
            assert!(words.iter().all(|w| p.contains(w)), "{p}");
        };
        at(3, &["`lost`", "`99-nothing`", "does not have"]);
        at(8, &["`wrong`", "\"m\"", "\"n\""]);
        at(13, &["`two`", "takes"]);
        at(18, &["`empty`", "empty"]);
        at(23, &["`huge`", "2000000000", "more than"]);
        at(33, &["`fine`", "twice", "line 28"]);
        assert_eq!(problems.len(), 6, "{problems:?}");
        // Only the one good case runs, once.
        let hidden = secret.hidden(&ex);
        assert_eq!(hidden.len(), ex.manifest.manifest.cases.len() + 1);
        assert_eq!(hidden.last().unwrap().params["n"], 4);
        // A secret with no file names itself in words.
        assert!(Secret::from_seed(3).problems(&[&ex]).is_empty());
        // A parse error still points at its line.
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "seed = 3\n\n[[case]]\nexercise = \"57-reduction\"\nname = \"x\"\nparams = { n = 1 }\nsize = 2\n").unwrap();
        let e = Secret::load(&bad, &[]).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:7:", bad.display())), "{e}");
    }
}
