//! One file: the similarity measure, in the order of the steps below; 489 of its 1193 lines are tests and 186 the list of kept words.
//! Similarity of a class's submissions: pairs of students whose marked regions are near-identical
//! once comments, white space and names are normalised and the workbook's own code is taken out.
//! MOSS and JPlag have no CUDA mode; this is their idea (fingerprints of k-grams of tokens) for the
//! workbook's files. It flags pairs for a person to look at and never changes a grade.
//!
//! The method, step by step:
//! 1. Each submission's marked regions (`// ANCHOR: name` of the exercise's original) are cut into
//!    tokens: comments dropped, white space ignored, string and character literals and numbers kept
//!    as written, C++/CUDA keywords and well-known CUDA and C names (`threadIdx`, `__syncthreads`,
//!    `atomicAdd`, `float4`, `cudaMemcpy`, `sqrtf`, ...) kept, and every other name a placeholder.
//! 2. Each run of `k` tokens (a k-gram) is hashed with its names numbered by order of first
//!    appearance inside the k-gram (`$0 [ $1 ] += $2`), so a consistent renaming of variables gives
//!    the same hashes wherever the code stands. The regions are short, so every k-gram is kept (no
//!    winnowing is needed to keep the sets small).
//! 3. The workbook's code is excluded: the k-grams of the exercise's untouched file and of the
//!    reference solution are removed from every submission, and in a large class so are those that
//!    most of the class shares (the obvious way to write a line). What is left is a student's own
//!    code; a submission with fewer than `min_own` own k-grams is not compared.
//! 4. A pair's similarity is the share of the smaller set of own k-grams that the other holds too
//!    (containment, so that a copy with code added is still seen); the Jaccard index is given beside.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use serde::Serialize;

use crate::class::roster::{self, Roster};
use crate::exercise::workbook::Workbook;

mod heatmap;
mod tables;

pub use heatmap::heatmap_svg;
pub use tables::{method, summary_section, to_csv, to_markdown};

/// The knobs of the comparison; `Config::default()` is what the gradebook uses.
#[derive(Debug, Clone, Serialize)]
pub struct SimilarityConfig {
    /// Tokens per k-gram.
    pub k: usize,
    /// Fewer own k-grams than this (on either side) and a pair is not compared. One changed
    /// statement makes up to k - 1 + its tokens new k-grams (about 20): that is not enough code of
    /// one's own to call a copy.
    pub min_own: usize,
    /// Pairs at or above this similarity are flagged in `similarity.md`.
    pub threshold: f64,
    /// Pairs below this similarity are left out of `similarity.csv` (noise).
    pub list_floor: f64,
    /// A k-gram held by more than `max(common_min, common_share * submissions)` submissions of an
    /// exercise is common knowledge and removed, like the workbook's code (MOSS's `-m`).
    pub common_min: usize,
    pub common_share: f64,
    /// At most this many students per exercise in the heat map (those of the most similar pairs).
    pub heat_max: usize,
}

impl Default for SimilarityConfig {
    fn default() -> SimilarityConfig {
        SimilarityConfig {
            k: 8,
            min_own: 30,
            threshold: 0.8,
            list_floor: 0.1,
            common_min: 10,
            common_share: 0.5,
            heat_max: 30,
        }
    }
}

/// One token of a normalised source: kept as written, or a name that becomes a placeholder.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Token {
    Kept(String),
    Name(String),
}

/// C++ and CUDA keywords, preprocessor words, and the well-known names of CUDA and the C and C++
/// libraries: a student does not rename these, so they stay as written.
const KEPT_WORDS: &[&str] = &[
    // C++ keywords.
    "alignas",
    "alignof",
    "and",
    "asm",
    "auto",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char16_t",
    "char32_t",
    "char8_t",
    "class",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "nullptr",
    "operator",
    "or",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    // Preprocessor.
    "include",
    "define",
    "undef",
    "ifdef",
    "ifndef",
    "endif",
    "elif",
    "pragma",
    "unroll",
    "once",
    "defined",
    // CUDA built-in variables and types.
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "warpSize",
    "dim3",
    "half",
    "half2",
    "nv_bfloat16",
    "nv_bfloat162",
    // Fixed-width and library types and constants.
    "size_t",
    "ptrdiff_t",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "uintptr_t",
    "NULL",
    "FLT_MAX",
    "FLT_MIN",
    "DBL_MAX",
    "INT_MAX",
    "INT_MIN",
    "UINT_MAX",
    "INFINITY",
    "NAN",
    "std",
    "numeric_limits",
    "vector",
    "swap",
    "cooperative_groups",
    "thread_block",
    "tiled_partition",
    "this_thread_block",
    "this_grid",
    "sync",
    // Math and C library functions.
    "min",
    "max",
    "abs",
    "fabs",
    "fabsf",
    "fminf",
    "fmaxf",
    "fmin",
    "fmax",
    "sqrt",
    "sqrtf",
    "rsqrt",
    "rsqrtf",
    "exp",
    "expf",
    "exp2f",
    "log",
    "logf",
    "log2f",
    "pow",
    "powf",
    "floor",
    "floorf",
    "ceil",
    "ceilf",
    "round",
    "roundf",
    "sin",
    "sinf",
    "cos",
    "cosf",
    "tanh",
    "tanhf",
    "erf",
    "erff",
    "fma",
    "fmaf",
    "isnan",
    "isinf",
    "printf",
    "fprintf",
    "malloc",
    "free",
    "calloc",
    "memcpy",
    "memset",
    "assert",
    "exit",
];

const VECTOR_BASES: &[&str] = &[
    "char",
    "uchar",
    "short",
    "ushort",
    "int",
    "uint",
    "long",
    "ulong",
    "longlong",
    "ulonglong",
    "float",
    "double",
];

fn kept_words() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| KEPT_WORDS.iter().copied().collect())
}

/// `float4`, `uint2`, `make_float4`, ...
fn is_vector_type(word: &str) -> bool {
    let word = word.strip_prefix("make_").unwrap_or(word);
    let Some(base) = word.strip_suffix(['1', '2', '3', '4']) else {
        return false;
    };
    VECTOR_BASES.contains(&base)
}

/// Whether a name stays as written: a keyword, a well-known name, a vector type, a name reserved to
/// the implementation (`__syncthreads`, `__shfl_down_sync`, `__ldg`, `__global__`), the CUDA runtime
/// (`cudaMalloc`, `cudaMemcpyHostToDevice`, `cudaStream_t`) or an atomic (`atomicAdd`, `atomicCAS`).
pub fn is_kept_word(word: &str) -> bool {
    let upper_after = |prefix: &str| {
        word.strip_prefix(prefix)
            .and_then(|r| r.chars().next())
            .is_some_and(|c| c.is_ascii_uppercase())
    };
    kept_words().contains(word)
        || is_vector_type(word)
        || word.starts_with("__")
        || upper_after("cuda")
        || upper_after("atomic")
}

const PUNCT3: &[&str] = &["<<<", ">>>", "<<=", ">>=", "->*", "..."];
const PUNCT2: &[&str] = &[
    "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=",
    "%=", "&=", "|=", "^=", ".*", "##",
];

/// The tokens of C++/CUDA source: comments and white space dropped, literals kept as written.
pub fn tokens(source: &str) -> Vec<Token> {
    let b = source.as_bytes();
    let text = |from: usize, to: usize| String::from_utf8_lossy(&b[from..to]).into_owned();
    let mut out: Vec<Token> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c.is_ascii_whitespace() || (c == b'\\' && matches!(next, Some(b'\n' | b'\r'))) {
            i += 1;
        } else if c == b'/' && next == Some(b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && next == Some(b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                i += 1;
            }
            i = (i + 2).min(b.len());
        } else if c == b'"' || c == b'\'' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            out.push(Token::Kept(text(start, i)));
        } else if c.is_ascii_digit() || (c == b'.' && next.is_some_and(|n| n.is_ascii_digit())) {
            let start = i;
            i += 1;
            while i < b.len() {
                let d = b[i];
                let exponent_sign = matches!(d, b'+' | b'-')
                    && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P')
                    && !b[start..i].starts_with(b"0x");
                if d.is_ascii_alphanumeric()
                    || d == b'.'
                    || d == b'_'
                    || d == b'\''
                    || exponent_sign
                {
                    i += 1;
                } else {
                    break;
                }
            }
            out.push(Token::Kept(text(start, i).replace('\'', "")));
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                i += 1;
            }
            let word = text(start, i);
            // A vector's members (`v.x`, `p->w`) are the type's, not the student's.
            let member = matches!(out.last(), Some(Token::Kept(p)) if p == "." || p == "->")
                && matches!(word.as_str(), "x" | "y" | "z" | "w");
            out.push(if member || is_kept_word(&word) {
                Token::Kept(word)
            } else {
                Token::Name(word)
            });
        } else {
            let rest = &b[i..];
            let len = if PUNCT3.iter().any(|p| rest.starts_with(p.as_bytes())) {
                3
            } else if PUNCT2.iter().any(|p| rest.starts_with(p.as_bytes())) {
                2
            } else {
                // One character (a whole one, where it is not ASCII).
                source[i..].chars().next().map(char::len_utf8).unwrap_or(1)
            };
            out.push(Token::Kept(text(i, i + len)));
            i += len;
        }
    }
    out
}

/// The normalised text of a source, for people and tests: its tokens separated by one space, each
/// name replaced by `$n`, n counting names by order of first appearance in the whole text.
pub fn normalise(source: &str) -> String {
    let mut names: HashMap<String, usize> = HashMap::new();
    let words: Vec<String> = tokens(source)
        .into_iter()
        .map(|t| match t {
            Token::Kept(s) => s,
            Token::Name(n) => {
                let next = names.len();
                format!("${}", names.entry(n).or_insert(next))
            }
        })
        .collect();
    words.join(" ")
}

fn fnv(h: &mut u64, bytes: &[u8]) {
    for byte in bytes {
        *h ^= *byte as u64;
        *h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
}

/// The hashes of every k-gram of `tokens`, names numbered by first appearance inside each k-gram.
/// A text shorter than `k` tokens has none.
pub fn kgrams(tokens: &[Token], k: usize) -> Vec<u64> {
    if k == 0 || tokens.len() < k {
        return Vec::new();
    }
    tokens
        .windows(k)
        .map(|window| {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            let mut names: Vec<&str> = Vec::with_capacity(k);
            for t in window {
                match t {
                    Token::Kept(s) => {
                        fnv(&mut h, b"k");
                        fnv(&mut h, s.as_bytes());
                    }
                    Token::Name(n) => {
                        let index = names.iter().position(|m| m == n).unwrap_or_else(|| {
                            names.push(n);
                            names.len() - 1
                        });
                        fnv(&mut h, b"$");
                        fnv(&mut h, &(index as u32).to_le_bytes());
                    }
                }
                // Not a byte of UTF-8: tokens cannot run into each other.
                fnv(&mut h, &[0xff]);
            }
            h
        })
        .collect()
}

/// The distinct k-gram hashes of a text, sorted.
pub fn fingerprints(text: &str, k: usize) -> Vec<u64> {
    let mut v = kgrams(&tokens(text), k);
    v.sort_unstable();
    v.dedup();
    v
}

/// The bodies (between the markers) of the regions of `source` named in `names`; the whole source
/// where its markers are broken or none of those regions is in it (a file that lost its markers is
/// still compared, the workbook's code being removed all the same).
pub fn region_texts(source: &str, names: &[String]) -> Vec<String> {
    let lines: Vec<&str> = source.lines().collect();
    let bodies: Vec<String> = match crate::exercise::regions::parse(source) {
        Ok(regions) => regions
            .iter()
            .filter(|r| names.is_empty() || names.contains(&r.name))
            .map(|r| lines[r.begin_line.min(r.end_line - 1)..r.end_line - 1].join("\n"))
            .collect(),
        Err(_) => Vec::new(),
    };
    if bodies.is_empty() {
        vec![source.to_string()]
    } else {
        bodies
    }
}

/// One student's file for an exercise.
#[derive(Debug, Clone)]
pub struct SubmittedFile {
    pub student: String,
    pub text: String,
}

/// Two students' submissions of one exercise, compared.
#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    pub exercise: String,
    pub student_a: String,
    pub student_b: String,
    /// Shared own k-grams over the smaller of the two sets of own k-grams, 0..1.
    pub similarity: f64,
    /// Shared over either's own k-grams, 0..1.
    pub jaccard: f64,
    pub shared: usize,
    pub own_a: usize,
    pub own_b: usize,
}

/// An exercise's comparison.
#[derive(Debug, Clone, Serialize)]
pub struct ExerciseSimilarity {
    pub exercise: String,
    /// The students whose file was read, in roster order, and their own k-grams (after removing
    /// the workbook's and the common ones).
    pub students: Vec<String>,
    pub own: Vec<usize>,
    /// K-grams removed as too common in the class (beyond the workbook's).
    pub common_removed: usize,
    /// Every compared pair at or above `list_floor`, most similar first.
    pub pairs: Vec<Pair>,
}

impl ExerciseSimilarity {
    /// Students with enough own code to be compared.
    pub fn compared(&self, cfg: &SimilarityConfig) -> usize {
        self.own.iter().filter(|&&n| n >= cfg.min_own).count()
    }

    pub fn flagged<'a>(&'a self, cfg: &'a SimilarityConfig) -> impl Iterator<Item = &'a Pair> + 'a {
        self.pairs
            .iter()
            .filter(move |p| p.similarity >= cfg.threshold - 1e-12)
    }
}

/// Every exercise of a class.
#[derive(Debug, Clone, Serialize)]
pub struct SimilarityReport {
    pub config: SimilarityConfig,
    pub exercises: Vec<ExerciseSimilarity>,
    /// Exercises of the class this workbook does not have (or cannot load): not compared.
    pub missing: Vec<String>,
}

impl SimilarityReport {
    pub fn flagged(&self) -> impl Iterator<Item = &Pair> + '_ {
        self.exercises.iter().flat_map(|e| e.flagged(&self.config))
    }
}

fn shared(a: &[u64], b: &[u64]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// Compare the submissions of one exercise, given the exercise's untouched file and its reference
/// solution (whose code is nobody's own).
pub fn compare_exercise(
    exercise: &str,
    original: &str,
    reference: &str,
    submissions: &[SubmittedFile],
    cfg: &SimilarityConfig,
) -> ExerciseSimilarity {
    let names: Vec<String> = crate::exercise::regions::parse(original)
        .map(|rs| rs.into_iter().map(|r| r.name).collect())
        .unwrap_or_default();
    let workbook: HashSet<u64> = fingerprints(original, cfg.k)
        .into_iter()
        .chain(fingerprints(reference, cfg.k))
        .collect();
    let mut own: Vec<Vec<u64>> = submissions
        .iter()
        .map(|s| {
            let mut v: Vec<u64> = region_texts(&s.text, &names)
                .iter()
                .flat_map(|r| kgrams(&tokens(r), cfg.k))
                .filter(|h| !workbook.contains(h))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect();
    let limit = cfg
        .common_min
        .max((cfg.common_share * submissions.len() as f64).ceil() as usize);
    let common_removed = remove_common(&mut own, limit);
    ExerciseSimilarity {
        exercise: exercise.to_string(),
        students: submissions.iter().map(|s| s.student.clone()).collect(),
        own: own.iter().map(Vec::len).collect(),
        common_removed,
        pairs: compared_pairs(exercise, submissions, &own, cfg),
    }
}

/// Remove the k-grams more than `limit` submissions hold; how many distinct ones that was.
fn remove_common(own: &mut [Vec<u64>], limit: usize) -> usize {
    let mut counts: HashMap<u64, usize> = HashMap::new();
    for v in own.iter() {
        for h in v {
            *counts.entry(*h).or_default() += 1;
        }
    }
    let common: HashSet<u64> = counts
        .into_iter()
        .filter(|(_, n)| *n > limit)
        .map(|(h, _)| h)
        .collect();
    if !common.is_empty() {
        for v in own.iter_mut() {
            v.retain(|h| !common.contains(h));
        }
    }
    common.len()
}

/// Every pair with enough own code on both sides and a similarity at or above the list floor,
/// most similar first.
fn compared_pairs(
    exercise: &str,
    submissions: &[SubmittedFile],
    own: &[Vec<u64>],
    cfg: &SimilarityConfig,
) -> Vec<Pair> {
    let mut pairs = Vec::new();
    for i in 0..submissions.len() {
        for j in i + 1..submissions.len() {
            let (a, b) = (&own[i], &own[j]);
            if a.len() < cfg.min_own.max(1) || b.len() < cfg.min_own.max(1) {
                continue;
            }
            let n = shared(a, b);
            let similarity = n as f64 / a.len().min(b.len()) as f64;
            if similarity < cfg.list_floor || n == 0 {
                continue;
            }
            pairs.push(Pair {
                exercise: exercise.to_string(),
                student_a: submissions[i].student.clone(),
                student_b: submissions[j].student.clone(),
                similarity,
                jaccard: n as f64 / (a.len() + b.len() - n) as f64,
                shared: n,
                own_a: a.len(),
                own_b: b.len(),
            });
        }
    }
    pairs.sort_by(|x, y| {
        y.similarity
            .total_cmp(&x.similarity)
            .then(y.jaccard.total_cmp(&x.jaccard))
            .then_with(|| (&x.student_a, &x.student_b).cmp(&(&y.student_a, &y.student_b)))
    });
    pairs
}

/// Read every student's file for each exercise of `exercises` (ids, in order) again, the way
/// `grade` found it, and compare them. Students without a file for an exercise are left out of it.
pub fn class_report(
    roster: &Roster,
    exercises: &[String],
    wb: &Workbook,
    cfg: &SimilarityConfig,
) -> SimilarityReport {
    let mut report = SimilarityReport {
        config: cfg.clone(),
        exercises: Vec::new(),
        missing: Vec::new(),
    };
    for id in exercises {
        let Some(ex) = wb.exercises.iter().find(|e| e.id() == id) else {
            report.missing.push(id.clone());
            continue;
        };
        let submissions: Vec<SubmittedFile> = roster
            .students
            .iter()
            .filter_map(|s| {
                let path = roster::find_file(s, ex, wb)?;
                let text = roster::read_submitted(&s.folder, &path).ok()?;
                Some(SubmittedFile {
                    student: s.id.clone(),
                    text,
                })
            })
            .collect();
        report.exercises.push(compare_exercise(
            id,
            ex.original,
            ex.solution,
            &submissions,
            cfg,
        ));
    }
    report
}

#[cfg(test)]
mod tests {
    use super::heatmap::heat_students;
    use super::*;
    use crate::plans::grade::ClassInfo;

    /// A small exercise: a buggy region, and the reference's fix.
    const ORIGINAL: &str = "#include \"cudabugs.cuh\"\nconstexpr int BLOCK = 256;\n// ANCHOR: kernel\n__global__ void scale(const float* x, float* y, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  y[i] = 2.0f * x[i];\n}\nvoid launch(const float* x, float* y, int n) {\n  scale<<<n / BLOCK, BLOCK>>>(x, y, n);\n}\n// ANCHOR_END: kernel\nvoid cb_run(cb::Io& io) { launch(nullptr, nullptr, 0); }\n";
    const REFERENCE: &str = "#include \"cudabugs.cuh\"\nconstexpr int BLOCK = 256;\n// ANCHOR: kernel\n__global__ void scale(const float* x, float* y, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = 2.0f * x[i];\n}\nvoid launch(const float* x, float* y, int n) {\n  if (n > 0) scale<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, y, n);\n}\n// ANCHOR_END: kernel\nvoid cb_run(cb::Io& io) { launch(nullptr, nullptr, 0); }\n";

    /// A student's own version: a grid-stride loop with float4 loads and a tail.
    const OWN_A: &str = r#"__global__ void scale(const float* x, float* y, int n) {
  const int stride = gridDim.x * blockDim.x;
  const float4* in4 = reinterpret_cast<const float4*>(x);
  float4* out4 = reinterpret_cast<float4*>(y);
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n / 4; k += stride) {
    float4 v = in4[k];
    v.x *= 2.0f; v.y *= 2.0f; v.z *= 2.0f; v.w *= 2.0f;
    out4[k] = v;
  }
  for (int k = n / 4 * 4 + blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) y[k] = x[k] * 2.0f;
}
void launch(const float* x, float* y, int n) {
  int blocks = std::min((n / 4 + BLOCK - 1) / BLOCK, 1024);
  if (blocks > 0) scale<<<blocks, BLOCK>>>(x, y, n);
}"#;

    /// Another student's own, independent version: one element per thread, two per thread with a
    /// shared staging buffer and an explicit count of blocks.
    const OWN_C: &str = r#"__global__ void scale(const float* x, float* y, int n) {
  __shared__ float tile[2 * BLOCK];
  int base = 2 * blockIdx.x * BLOCK;
  for (int j = 0; j < 2; ++j) {
    int g = base + j * BLOCK + threadIdx.x;
    tile[j * BLOCK + threadIdx.x] = g < n ? x[g] : 0.0f;
  }
  __syncthreads();
  for (int j = 0; j < 2; ++j) {
    int g = base + j * BLOCK + threadIdx.x;
    if (g < n) y[g] = tile[j * BLOCK + threadIdx.x] + tile[j * BLOCK + threadIdx.x];
  }
}
void launch(const float* x, float* y, int n) {
  const int per_block = 2 * BLOCK;
  const int grid = (n + per_block - 1) / per_block;
  if (grid != 0) { scale<<<grid, BLOCK>>>(x, y, n); }
}"#;

    fn file(region: &str) -> String {
        REFERENCE.replace(
            REFERENCE
                .split("// ANCHOR: kernel\n")
                .nth(1)
                .unwrap()
                .split("// ANCHOR_END: kernel")
                .next()
                .unwrap(),
            &format!("{region}\n"),
        )
    }

    /// `OWN_A` with every name of the student's changed, lines re-indented, comments and a line added.
    fn renamed_a() -> String {
        let mut s = OWN_A.to_string();
        for (from, to) in [
            ("stride", "step"),
            ("in4", "src_vec"),
            ("out4", "dst_vec"),
            ("blocks", "num_blocks"),
            ("k ", "idx "),
            ("k;", "idx;"),
            ("k]", "idx]"),
            ("k +=", "idx +="),
        ] {
            s = s.replace(from, to);
        }
        s = s
            .replace("    ", "\t")
            .replace("; v.", ";\n    v.")
            .replace("  for", "  // vectorised main loop\n  for");
        // And a line of their own, to look different.
        s.replace(
            "float4* dst_vec",
            "int unused_count = 0;\n  float4* dst_vec",
        )
    }

    fn subs(list: &[(&str, String)]) -> Vec<SubmittedFile> {
        list.iter()
            .map(|(s, t)| SubmittedFile {
                student: s.to_string(),
                text: t.clone(),
            })
            .collect()
    }

    fn pair<'a>(e: &'a ExerciseSimilarity, a: &str, b: &str) -> Option<&'a Pair> {
        e.pairs.iter().find(|p| {
            (p.student_a == a && p.student_b == b) || (p.student_a == b && p.student_b == a)
        })
    }

    #[test]
    fn tokens_drop_comments_keep_literals_and_builtins() {
        let t =
            tokens("int /* c */ i = threadIdx.x; // gone\nprintf(\"a // b\", 1.5e-3f, v.w, q.k);");
        let kept = |s: &str| Token::Kept(s.into());
        let name = |s: &str| Token::Name(s.into());
        assert_eq!(
            t,
            vec![
                kept("int"),
                name("i"),
                kept("="),
                kept("threadIdx"),
                kept("."),
                kept("x"),
                kept(";"),
                kept("printf"),
                kept("("),
                kept("\"a // b\""),
                kept(","),
                kept("1.5e-3f"),
                kept(","),
                name("v"),
                kept("."),
                kept("w"),
                kept(","),
                name("q"),
                kept("."),
                name("k"),
                kept(")"),
                kept(";"),
            ]
        );
        assert!(
            is_kept_word("__shfl_down_sync")
                && is_kept_word("atomicAdd")
                && is_kept_word("float4")
                && is_kept_word("make_float4")
                && is_kept_word("cudaMemcpyHostToDevice")
        );
        assert!(
            !is_kept_word("atomic")
                && !is_kept_word("cuda_sum")
                && !is_kept_word("float5")
                && !is_kept_word("acc")
        );
        assert_eq!(normalise("k<<<g, b>>>(x);"), "$0 <<< $1 , $2 >>> ( $3 ) ;");
    }

    #[test]
    fn whitespace_comments_and_names_do_not_matter() {
        let a = "for (int i = 0; i < n; ++i) { acc += x[i] * w[i]; }";
        let b = "// dot product\nfor(int j=0;j<len;++j){\n    /* weight */ sum+=in[j]*wt[j];\n}\n";
        assert_eq!(normalise(a), normalise(b));
        assert_eq!(fingerprints(a, 8), fingerprints(b, 8));
        let spaced = file(OWN_A)
            .replace(" = ", "   =   ")
            .replace('\n', "\n\n  // a comment\n");
        let e = compare_exercise(
            "ex",
            ORIGINAL,
            REFERENCE,
            &subs(&[("a", file(OWN_A)), ("b", spaced)]),
            &SimilarityConfig::default(),
        );
        assert_eq!(pair(&e, "a", "b").expect("compared").similarity, 1.0);
    }

    #[test]
    fn a_renamed_copy_scores_high() {
        let cfg = SimilarityConfig::default();
        let e = compare_exercise(
            "ex",
            ORIGINAL,
            REFERENCE,
            &subs(&[
                ("a", file(OWN_A)),
                ("b", file(&renamed_a())),
                ("c", file(OWN_C)),
            ]),
            &cfg,
        );
        assert!(e.own[0] >= cfg.min_own, "own k-grams of a: {}", e.own[0]);
        let p = pair(&e, "a", "b").expect("compared");
        assert!(p.similarity >= 0.9, "{p:?}");
        assert_eq!(e.flagged(&cfg).count(), 1, "{:?}", e.pairs);
    }

    #[test]
    fn independent_fixes_score_low() {
        let cfg = SimilarityConfig::default();
        let e = compare_exercise(
            "ex",
            ORIGINAL,
            REFERENCE,
            &subs(&[("a", file(OWN_A)), ("c", file(OWN_C))]),
            &cfg,
        );
        assert!(e.own.iter().all(|&n| n >= cfg.min_own), "{:?}", e.own);
        let similarity = pair(&e, "a", "c").map(|p| p.similarity).unwrap_or(0.0);
        assert!(similarity < 0.3, "{similarity} {:?}", e.pairs);
    }

    #[test]
    fn the_reference_or_the_untouched_file_is_nobodys_own_code() {
        let cfg = SimilarityConfig::default();
        let list = [
            ("r1", REFERENCE.to_string()),
            ("r2", REFERENCE.replace("  ", "    ")),
            ("u1", ORIGINAL.to_string()),
            ("u2", ORIGINAL.to_string()),
            ("a", file(OWN_A)),
        ];
        let e = compare_exercise("ex", ORIGINAL, REFERENCE, &subs(&list), &cfg);
        assert_eq!(&e.own[..4], &[0, 0, 0, 0]);
        assert!(e.pairs.is_empty(), "{:?}", e.pairs);
        assert_eq!(e.flagged(&cfg).count(), 0);
        // A student whose fix is the reference with a line of their own has too little own code.
        let tweaked = REFERENCE.replace(
            "if (i < n) y[i] = 2.0f * x[i];",
            "if (i < n) { y[i] = x[i] + x[i]; }",
        );
        let e = compare_exercise(
            "ex",
            ORIGINAL,
            REFERENCE,
            &subs(&[("t1", tweaked.clone()), ("t2", tweaked)]),
            &cfg,
        );
        assert!(
            e.own.iter().all(|&n| n > 0 && n < cfg.min_own) && e.pairs.is_empty(),
            "{:?}",
            e.own
        );
    }

    #[test]
    fn code_most_of_a_large_class_shares_is_not_evidence() {
        let cfg = SimilarityConfig {
            common_min: 3,
            ..SimilarityConfig::default()
        };
        let mut list: Vec<(String, String)> =
            (0..8).map(|i| (format!("s{i}"), file(OWN_A))).collect();
        list.push(("c".into(), file(OWN_C)));
        let submissions: Vec<SubmittedFile> = list
            .into_iter()
            .map(|(student, text)| SubmittedFile { student, text })
            .collect();
        let e = compare_exercise("ex", ORIGINAL, REFERENCE, &submissions, &cfg);
        assert!(e.common_removed > 0);
        assert_eq!(&e.own[..8], &[0; 8], "what 8 of 9 share is removed");
    }

    #[test]
    fn the_reports_say_what_they_flag() {
        let cfg = SimilarityConfig::default();
        let e = compare_exercise(
            "01-ex",
            ORIGINAL,
            REFERENCE,
            &subs(&[
                ("a", file(OWN_A)),
                ("b", file(&renamed_a())),
                ("c", file(OWN_C)),
                ("u", ORIGINAL.into()),
            ]),
            &cfg,
        );
        let report = SimilarityReport {
            config: cfg,
            exercises: vec![e],
            missing: vec!["02-gone".into()],
        };
        let csv = to_csv(&report);
        let mut lines = csv.lines();
        assert_eq!(lines.next(), Some("exercise,student_a,student_b,similarity,shared_kgrams,own_kgrams_a,own_kgrams_b,jaccard"));
        assert!(
            lines.next().unwrap().starts_with("01-ex,a,b,1.000,") || csv.contains("01-ex,a,b,0.9"),
            "{csv}"
        );
        let md = to_markdown(&report);
        assert!(
            md.contains("never a grade")
                && md.contains("| 01-ex | a | b |")
                && md.contains("02-gone")
                && md.contains("similarity.svg"),
            "{md}"
        );
        assert!(summary_section(&report).contains("1 pair(s) of submissions in 1 exercise(s)"));
        let svg = heatmap_svg(&report).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("01-ex") && svg.contains("rect"),
            "{svg}"
        );
        let empty = SimilarityReport {
            config: SimilarityConfig::default(),
            exercises: vec![],
            missing: vec![],
        };
        assert!(heatmap_svg(&empty).unwrap().contains("No exercise"));
        assert!(to_markdown(&empty).contains("None."));
    }

    #[test]
    fn a_large_class_shows_the_students_of_the_most_similar_pairs() {
        let cfg = SimilarityConfig {
            heat_max: 4,
            ..SimilarityConfig::default()
        };
        let students: Vec<String> = (0..10).map(|i| format!("s{i}")).collect();
        let p = |a: usize, b: usize, s: f64| Pair {
            exercise: "e".into(),
            student_a: students[a].clone(),
            student_b: students[b].clone(),
            similarity: s,
            jaccard: s,
            shared: 30,
            own_a: 30,
            own_b: 30,
        };
        let e = ExerciseSimilarity {
            exercise: "e".into(),
            students: students.clone(),
            own: vec![30; 10],
            common_removed: 0,
            pairs: vec![p(7, 2, 0.95), p(1, 2, 0.5), p(3, 4, 0.4)],
        };
        assert_eq!(heat_students(&e, &cfg), vec![1, 2, 3, 7]);
    }

    /// A fix of 57-reduction of a student's own: sequential addressing, two loads per thread, the
    /// last warp unrolled with shuffles.
    const REDUCTION_OWN: &str = r#"__global__ void sum(const float* x, float* total, int n) {
  __shared__ float partial[BLOCK];
  const unsigned tid = threadIdx.x;
  const unsigned first = blockIdx.x * (2 * BLOCK) + tid;
  float mine = 0.0f;
  for (unsigned g = first; g < n; g += 2 * BLOCK * gridDim.x) {
    mine += x[g];
    if (g + BLOCK < n) mine += x[g + BLOCK];
  }
  partial[tid] = mine;
  __syncthreads();
  for (unsigned half_width = BLOCK / 2; half_width > 32; half_width >>= 1) {
    if (tid < half_width) partial[tid] += partial[tid + half_width];
    __syncthreads();
  }
  if (tid < 32) {
    float v = partial[tid] + partial[tid + 32];
    for (int lane_gap = 16; lane_gap >= 1; lane_gap /= 2) v += __shfl_xor_sync(0xffffffff, v, lane_gap);
    if (tid == 0) atomicAdd(total, v);
  }
}

void launch_sum(const float* x, float* total, int n) {
  if (n < 1) return;
  int grid = (n + 2 * BLOCK - 1) / (2 * BLOCK);
  if (grid > 2048) grid = 2048;
  sum<<<grid, BLOCK>>>(x, total, n);
}
"#;

    /// A file of the workbook, for as long as the tests run.
    fn repo_file(p: &str) -> &'static str {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap();
        Box::leak(
            std::fs::read_to_string(repo.join(p))
                .unwrap()
                .into_boxed_str(),
        )
    }

    /// A workbook of the real 57-reduction alone.
    fn reduction_workbook() -> Workbook {
        use crate::exercise::catalog::Embedded;
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .to_path_buf();
        let embedded: &'static [Embedded] =
            Box::leak(Box::new([Embedded::read(&repo, "57-reduction")]));
        let wb = Workbook::new(repo, embedded, &[]).unwrap();
        assert_eq!(wb.exercises.len(), 1, "{:?}", wb.broken);
        wb
    }

    /// A class in folders: alice's own fix, bob's renamed copy of it, carol's reference solution,
    /// dave's untouched file, erin's re-indented reference and frank's empty folder; graded on
    /// 57-reduction and an exercise the workbook does not have.
    fn reduction_class(original: &str, solution: &str) -> (tempfile::TempDir, ClassInfo) {
        let class = tempfile::tempdir().unwrap();
        let with_region = |region: &str| {
            let body = solution
                .split("// ANCHOR: kernel\n")
                .nth(1)
                .unwrap()
                .split("// ANCHOR_END: kernel")
                .next()
                .unwrap();
            solution.replace(body, region)
        };
        let renamed = REDUCTION_OWN
            .replace("partial", "buf")
            .replace("mine", "acc")
            .replace("first", "start")
            .replace("half_width", "s")
            .replace("lane_gap", "off")
            .replace("grid", "nb")
            .replace("  ", "    ");
        let files = [
            ("alice", with_region(REDUCTION_OWN)),
            ("bob", with_region(&renamed)),
            ("carol", solution.to_string()),
            ("dave", original.to_string()),
            ("erin", solution.replace("  ", " ")),
        ];
        for (student, text) in &files {
            std::fs::create_dir_all(class.path().join(student)).unwrap();
            std::fs::write(class.path().join(student).join("sum.cu"), text).unwrap();
        }
        std::fs::create_dir_all(class.path().join("frank")).unwrap();
        let roster = crate::class::roster::discover(class.path()).unwrap();
        let info = ClassInfo {
            submissions: class.path().to_path_buf(),
            roster,
            exercises: vec!["57-reduction".into(), "99-gone".into()],
            secret: String::new(),
        };
        (class, info)
    }

    /// The workbook's real 57-reduction, a class in folders, and the gradebook's files.
    #[test]
    fn the_gradebook_writes_the_report_and_its_summary_section() {
        let wb = reduction_workbook();
        let (original, solution) = (
            repo_file("exercises/57-reduction/sum.cu"),
            repo_file("solutions/57-reduction/sum.cu"),
        );
        let (_class, info) = reduction_class(original, solution);

        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("summary.md"), "# Class summary\n\ntext\n").unwrap();
        let written = crate::report::gradebook::write_similarity(out.path(), &info, &wb).unwrap();
        assert_eq!(written.len(), 4);
        let csv = std::fs::read_to_string(out.path().join("similarity.csv")).unwrap();
        let first = csv.lines().nth(1).expect("a compared pair");
        assert!(first.starts_with("57-reduction,alice,bob,"), "{csv}");
        let similarity: f64 = first.split(',').nth(3).unwrap().parse().unwrap();
        assert!(similarity >= 0.9, "{csv}");
        assert!(
            !csv.contains("carol") && !csv.contains("dave") && !csv.contains("erin"),
            "the reference and the untouched file are nobody's own: {csv}"
        );
        let md = std::fs::read_to_string(out.path().join("similarity.md")).unwrap();
        assert!(
            md.contains("| 57-reduction | alice | bob |")
                && md.contains("99-gone")
                && md.contains("| 57-reduction | 5 | 2 | 1 |"),
            "{md}"
        );
        assert!(std::fs::read_to_string(out.path().join("similarity.svg"))
            .unwrap()
            .contains("57-reduction"));
        let summary = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
        assert!(
            summary.starts_with("# Class summary\n\ntext\n\n<!-- similarity")
                && summary.contains("1 pair(s)")
                && summary.contains("(similarity.svg)"),
            "{summary}"
        );
        // Written again (a `grade merge` after more shards): the section is replaced, not repeated.
        crate::report::gradebook::write_similarity(out.path(), &info, &wb).unwrap();
        assert_eq!(
            std::fs::read_to_string(out.path().join("summary.md")).unwrap(),
            summary
        );
    }
}
