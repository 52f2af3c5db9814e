//! One file: the references of exercises 01-30 and 58-63 and their signatures; 442 of its 1405 lines are tests.
//! (The first group of references; later groups reuse some of them by name. `mod.rs` is the registry.)

#[allow(unused_imports)]
use super::*;

pub(super) const REFERENCES: &[(&str, ReferenceFn)] = &[
    ("transpose", transpose),
    ("scale-bias-relu", scale_bias_relu),
    ("sum", sum),
    ("smooth3", smooth3),
    ("histogram256", histogram256),
    ("window", window),
    ("mean-center", mean_center),
    ("softmax-rows", softmax_rows),
    ("dot", dot),
    ("smooth7", smooth7),
    ("frame-sums", frame_sums),
    ("row-sums16", row_sums16),
    ("segment-sums", segment_sums),
    ("minmax-rescale", minmax_rescale),
    ("in-degree1024", in_degree1024),
    ("box-blur3", box_blur3),
    ("square-plus-one", square_plus_one),
    ("row-sums", row_sums),
    ("half-transpose", half_transpose),
    ("relax-pairs", relax_pairs),
    ("matmul", matmul),
    ("unit-histogram256", unit_histogram256),
    ("two-x-plus-one", two_x_plus_one),
    // Exercises 18-23
    ("median-window", median_window),
    // Exercises 24-30
    ("histogram-mod", histogram_mod),
    ("polyval", polyval),
    ("diffuse16", diffuse16),
    // Exercises 58-59
    ("wma64", wma64),
    ("kinetic-energy16", kinetic_energy16),
    // Exercises 60-61
    ("prefix-sum", prefix_sum),
    ("conv3x3", conv3x3),
    // Exercise 62
    ("heat-steps", heat_steps),
    // Exercise 63
    ("cooling", cooling),
];

pub(super) const SIGNATURES: &[(&str, Signature)] = &[
    (
        "transpose",
        Signature {
            inputs: &[("in", DType::F32, "rows * cols")],
            outputs: &[("out", DType::F32, "rows * cols")],
        },
    ),
    (
        "scale-bias-relu",
        Signature {
            inputs: &[
                ("x", DType::F32, "batch * channels * hw"),
                ("scale", DType::F32, "channels"),
                ("bias", DType::F32, "channels"),
            ],
            outputs: &[("y", DType::F32, "batch * channels * hw")],
        },
    ),
    (
        "sum",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("total", DType::F32, "1")],
        },
    ),
    (
        "smooth3",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("y", DType::F32, "n")],
        },
    ),
    (
        "histogram256",
        Signature {
            inputs: &[("values", DType::U32, "n")],
            outputs: &[("bins", DType::U32, "256")],
        },
    ),
    (
        "window",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("y", DType::F32, "len")],
        },
    ),
    (
        "mean-center",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("y", DType::F32, "n")],
        },
    ),
    (
        "softmax-rows",
        Signature {
            inputs: &[("x", DType::F32, "rows * cols")],
            outputs: &[("y", DType::F32, "rows * cols")],
        },
    ),
    (
        "dot",
        Signature {
            inputs: &[("a", DType::F32, "n"), ("b", DType::F32, "n")],
            outputs: &[("dot", DType::F32, "1")],
        },
    ),
    (
        "smooth7",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("y", DType::F32, "n")],
        },
    ),
    (
        "frame-sums",
        Signature {
            inputs: &[("tile", DType::U32, "tile_len")],
            outputs: &[("sums", DType::U32, "frames")],
        },
    ),
    (
        "row-sums16",
        Signature {
            inputs: &[("x", DType::F32, "rows * 16")],
            outputs: &[("y", DType::F32, "rows")],
        },
    ),
    (
        "segment-sums",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("sums", DType::F32, "segments")],
        },
    ),
    (
        "minmax-rescale",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("y", DType::F32, "n")],
        },
    ),
    (
        "in-degree1024",
        Signature {
            inputs: &[("dst", DType::U32, "edges")],
            outputs: &[("degree", DType::U32, "1024")],
        },
    ),
    (
        "box-blur3",
        Signature {
            inputs: &[("img", DType::F32, "width * height")],
            outputs: &[("out", DType::F32, "width * height")],
        },
    ),
    (
        "square-plus-one",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("y", DType::F32, "n")],
        },
    ),
    (
        "row-sums",
        Signature {
            inputs: &[("m", DType::F32, "rows * cols")],
            outputs: &[("sums", DType::F32, "rows")],
        },
    ),
    (
        "half-transpose",
        Signature {
            inputs: &[("a", DType::F32, "rows * cols")],
            outputs: &[("t", DType::F32, "rows * cols")],
        },
    ),
    (
        "relax-pairs",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("y", DType::F32, "n")],
        },
    ),
    (
        "matmul",
        Signature {
            inputs: &[("a", DType::F32, "m * k"), ("b", DType::F32, "k * n")],
            outputs: &[("c", DType::F32, "m * n")],
        },
    ),
    (
        "unit-histogram256",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("bins", DType::U32, "256")],
        },
    ),
    (
        "two-x-plus-one",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("y", DType::F32, "n")],
        },
    ),
    // Exercises 18-23
    (
        "median-window",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("y", DType::F32, "n")],
        },
    ),
    // Exercises 24-30
    (
        "histogram-mod",
        Signature {
            inputs: &[("values", DType::U32, "n")],
            outputs: &[("counts", DType::U32, "bins")],
        },
    ),
    (
        "polyval",
        Signature {
            inputs: &[("x", DType::F32, "n"), ("c", DType::F32, "terms")],
            outputs: &[("y", DType::F32, "n")],
        },
    ),
    (
        "diffuse16",
        Signature {
            inputs: &[("x", DType::F32, "rows * cols")],
            outputs: &[("y", DType::F32, "rows * cols")],
        },
    ),
    // Exercises 58-59
    (
        "wma64",
        Signature {
            inputs: &[("x", DType::F32, "steps * channels")],
            outputs: &[("y", DType::F32, "steps * channels")],
        },
    ),
    (
        "kinetic-energy16",
        Signature {
            inputs: &[("fields", DType::F32, "16 * n")],
            outputs: &[("e", DType::F32, "n")],
        },
    ),
    // Exercises 60-61
    (
        "prefix-sum",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("y", DType::F32, "n")],
        },
    ),
    (
        "conv3x3",
        Signature {
            inputs: &[
                ("x", DType::F32, "cin * height * width"),
                ("w", DType::F32, "cout * cin * 9"),
            ],
            outputs: &[("y", DType::F32, "cout * height * width")],
        },
    ),
    // Exercise 62
    (
        "heat-steps",
        Signature {
            inputs: &[("u0", DType::F32, "rods * cells")],
            outputs: &[("u", DType::F32, "rods * cells")],
        },
    ),
    // Exercise 63
    (
        "cooling",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("y", DType::F32, "n")],
        },
    ),
];

/// `out` (cols x rows) = transpose of `in` (rows x cols), both row-major.
fn transpose(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (rows, cols) = (param(p, "rows"), param(p, "cols"));
    let a = inputs[0].data.as_f32();
    let mut t = vec![0f32; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = a[r * cols + c];
        }
    }
    out("out", Data::F32(t))
}

/// `y[i] = max(0, x[i] * scale[c] + bias[c])` with `c = (i / hw) % channels` (NCHW layout).
fn scale_bias_relu(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (channels, hw) = (param(p, "channels"), param(p, "hw"));
    let (x, scale, bias) = (
        inputs[0].data.as_f32(),
        inputs[1].data.as_f32(),
        inputs[2].data.as_f32(),
    );
    let y = x
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let c = (i / hw) % channels;
            // The same single-precision fused multiply-add the GPU does.
            v.mul_add(scale[c], bias[c]).max(0.0)
        })
        .collect();
    out("y", Data::F32(y))
}

/// The sum of all elements, accumulated in f64.
fn sum(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let total: f64 = inputs[0].data.as_f32().iter().map(|&v| v as f64).sum();
    out("total", Data::F32(vec![total as f32]))
}

/// 3-point weighted moving average (1/4, 1/2, 1/4) with clamped ends.
fn smooth3(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let n = param(p, "n");
    let x = inputs[0].data.as_f32();
    let at = |i: isize| x[i.clamp(0, n as isize - 1) as usize] as f64;
    let y = (0..n as isize)
        .map(|i| (0.25 * at(i - 1) + 0.5 * at(i) + 0.25 * at(i + 1)) as f32)
        .collect();
    out("y", Data::F32(y))
}

/// 256-bin histogram of 12-bit values, bin = value >> 4.
fn histogram256(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let mut bins = vec![0u32; 256];
    for &v in inputs[0].data.as_u32() {
        bins[((v >> 4) & 255) as usize] += 1;
    }
    out("bins", Data::U32(bins))
}

/// `y[i] = x[offset + i]` for `i < len`; past the end of `x`, 0 (a manifest keeps offset + len <= n).
fn window(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (offset, len) = (param(p, "offset"), param(p, "len"));
    let x = inputs[0].data.as_f32();
    out(
        "y",
        Data::F32(
            (0..len)
                .map(|i| x.get(offset + i).copied().unwrap_or(0.0))
                .collect(),
        ),
    )
}

/// `y[i] = x[i] - mean(x)`, the mean in f64.
fn mean_center(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let x = inputs[0].data.as_f32();
    let mean = x.iter().map(|&v| v as f64).sum::<f64>() / x.len().max(1) as f64;
    out(
        "y",
        Data::F32(x.iter().map(|&v| (v as f64 - mean) as f32).collect()),
    )
}

/// Softmax over each row of a row-major `rows x cols` matrix, in f64.
fn softmax_rows(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let cols = param(p, "cols");
    let x = inputs[0].data.as_f32();
    let mut y = Vec::with_capacity(x.len());
    for row in x.chunks(cols.max(1)) {
        let m = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
        let e: Vec<f64> = row.iter().map(|&v| (v as f64 - m).exp()).collect();
        let sum: f64 = e.iter().sum();
        y.extend(e.iter().map(|v| (v / sum) as f32));
    }
    out("y", Data::F32(y))
}

/// The dot product of `a` and `b`, accumulated in f64.
fn dot(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (a, b) = (inputs[0].data.as_f32(), inputs[1].data.as_f32());
    let total: f64 = a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum();
    out("dot", Data::F32(vec![total as f32]))
}

/// 7-point weighted average (1 2 3 4 3 2 1) / 16 with clamped ends.
fn smooth7(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    const W: [f64; 7] = [1.0, 2.0, 3.0, 4.0, 3.0, 2.0, 1.0];
    let n = param(p, "n");
    let x = inputs[0].data.as_f32();
    let at = |i: isize| x[i.clamp(0, n as isize - 1) as usize] as f64;
    let y = (0..n as isize)
        .map(|i| {
            (W.iter()
                .enumerate()
                .map(|(k, w)| w * at(i + k as isize - 3))
                .sum::<f64>()
                / 16.0) as f32
        })
        .collect();
    out("y", Data::F32(y))
}

/// The pixel sum of each frame of a batch built from a tile: pixel `p` of frame `f` is
/// `(tile[p % tile_len] + f) % 256`. Counted from histograms of the tile's values, not per pixel:
/// 2.2 billion pixels would take seconds, and a frame's sum depends on `f` only modulo 256.
fn frame_sums(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (frames, frame_len, tile_len) = (
        param(p, "frames"),
        param(p, "frame_len"),
        param(p, "tile_len"),
    );
    let tile = inputs[0].data.as_u32();
    let (whole, rest) = (frame_len / tile_len.max(1), frame_len % tile_len.max(1));
    let histogram = |values: &[u32]| {
        let mut h = [0u64; 256];
        for &v in values {
            h[(v & 255) as usize] += 1;
        }
        h
    };
    let (all, head) = (histogram(tile), histogram(&tile[..rest.min(tile.len())]));
    let shifted = |h: &[u64; 256], f: usize| -> u64 {
        h.iter()
            .enumerate()
            .map(|(v, &n)| n * ((v + f) & 255) as u64)
            .sum()
    };
    let by_shift: Vec<u32> = (0..256.min(frames))
        .map(|f| (shifted(&all, f) * whole as u64 + shifted(&head, f)) as u32)
        .collect();
    out(
        "sums",
        Data::U32((0..frames).map(|f| by_shift[f % 256]).collect()),
    )
}

/// The sum of each 16-wide row, in f64.
fn row_sums16(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let x = inputs[0].data.as_f32();
    out(
        "y",
        Data::F32(
            x.chunks(16)
                .map(|r| r.iter().map(|&v| v as f64).sum::<f64>() as f32)
                .collect(),
        ),
    )
}

/// The sum of each 256-element segment (the last may be shorter), in f64.
fn segment_sums(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let segments = param(p, "segments");
    let x = inputs[0].data.as_f32();
    let sums = (0..segments)
        .map(|s| {
            x.iter()
                .skip(s * 256)
                .take(256)
                .map(|&v| v as f64)
                .sum::<f64>() as f32
        })
        .collect();
    out("sums", Data::F32(sums))
}

/// `y = (x - min) / (max - min)`.
fn minmax_rescale(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let x = inputs[0].data.as_f32();
    let lo = x.iter().fold(f32::INFINITY, |m, &v| m.min(v));
    let hi = x.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    out(
        "y",
        Data::F32(
            x.iter()
                .map(|&v| ((v as f64 - lo as f64) / (hi as f64 - lo as f64)) as f32)
                .collect(),
        ),
    )
}

/// How many edges point at each of 1024 nodes (`dst % 1024`).
fn in_degree1024(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let mut degree = vec![0u32; 1024];
    for &d in inputs[0].data.as_u32() {
        degree[(d % 1024) as usize] += 1;
    }
    out("degree", Data::U32(degree))
}

/// 3x3 box blur of a row-major `height x width` image, edges clamped, in f64.
fn box_blur3(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (w, h) = (param(p, "width") as isize, param(p, "height") as isize);
    let img = inputs[0].data.as_f32();
    let at = |r: isize, c: isize| img[(r.clamp(0, h - 1) * w + c.clamp(0, w - 1)) as usize] as f64;
    let mut y = Vec::with_capacity(img.len());
    for r in 0..h {
        for c in 0..w {
            let sum: f64 = (-1..=1)
                .flat_map(|dr| (-1..=1).map(move |dc| (dr, dc)))
                .map(|(dr, dc)| at(r + dr, c + dc))
                .sum();
            y.push((sum / 9.0) as f32);
        }
    }
    out("out", Data::F32(y))
}

/// `y = x * x + 1`, with the single-precision fused multiply-add the GPU does.
fn square_plus_one(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    out(
        "y",
        Data::F32(
            inputs[0]
                .data
                .as_f32()
                .iter()
                .map(|&v| v.mul_add(v, 1.0))
                .collect(),
        ),
    )
}

/// The sum of each row of a row-major `rows x cols` matrix, in f64.
fn row_sums(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let cols = param(p, "cols");
    let m = inputs[0].data.as_f32();
    let sums = if cols == 0 {
        vec![0.0; param(p, "rows")]
    } else {
        m.chunks(cols)
            .map(|r| r.iter().map(|&v| v as f64).sum::<f64>() as f32)
            .collect()
    };
    out("sums", Data::F32(sums))
}

/// `t` (cols x rows) = 0.5 * the transpose of `a` (rows x cols), both row-major: exact in f32.
fn half_transpose(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (rows, cols) = (param(p, "rows"), param(p, "cols"));
    let a = inputs[0].data.as_f32();
    let mut t = vec![0f32; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = 0.5 * a[r * cols + c];
        }
    }
    out("t", Data::F32(t))
}

/// How many fused multiply-adds each element of `relax-pairs` goes through.
pub const RELAX_STEPS: usize = 512;

/// Even elements: `v = fma(v, 0.999, 0.001)`, odd: `v = fma(v, -0.5, 1.0)`, RELAX_STEPS times, in
/// single precision with the GPU's fused multiply-add: the same bits as `fmaf`.
fn relax_pairs(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let y = inputs[0]
        .data
        .as_f32()
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let (a, b) = if i % 2 == 0 {
                (0.999f32, 0.001f32)
            } else {
                (-0.5, 1.0)
            };
            (0..RELAX_STEPS).fold(x, |v, _| v.mul_add(a, b))
        })
        .collect();
    out("y", Data::F32(y))
}

/// `c` (m x n) = `a` (m x k) times `b` (k x n), row-major, accumulated in f64.
fn matmul(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (m, n, k) = (param(p, "m"), param(p, "n"), param(p, "k"));
    let (a, b) = (inputs[0].data.as_f32(), inputs[1].data.as_f32());
    let mut c = vec![0f64; m * n];
    for r in 0..m {
        let row = &mut c[r * n..(r + 1) * n];
        for i in 0..k {
            let av = a[r * k + i] as f64;
            for (cv, &bv) in row.iter_mut().zip(&b[i * n..(i + 1) * n]) {
                *cv += av * bv as f64;
            }
        }
    }
    out("c", Data::F32(c.into_iter().map(|v| v as f32).collect()))
}

/// 256 bins over [0, 1): bin = min(int(x * 256), 255), the product in f32 as on the GPU.
fn unit_histogram256(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let mut bins = vec![0u32; 256];
    for &x in inputs[0].data.as_f32() {
        bins[((x * 256.0) as i64).clamp(0, 255) as usize] += 1;
    }
    out("bins", Data::U32(bins))
}

/// `y = 2 x + 1` in f32 (2 x is exact, so fused or not the result is the same).
fn two_x_plus_one(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    out(
        "y",
        Data::F32(
            inputs[0]
                .data
                .as_f32()
                .iter()
                .map(|&v| 2.0 * v + 1.0)
                .collect(),
        ),
    )
}

// Exercises 18-23

/// The running median: `y[i]` is the median of `x[i - r] ..= x[i + r]`, indices clamped to the
/// ends (2r + 1 values, sorted, the middle one): exact, no arithmetic. The window slides over
/// counts by value rank (a Fenwick tree), so any radius costs O(n log n): the edges' repeats are
/// counts, not copies (a radius of 2^31 once asked the fuzz test for 17 GB).
fn median_window(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (n, r) = (param(p, "n"), param(p, "r") as u128);
    let x = &inputs[0].data.as_f32()[..n];
    if n == 0 {
        return out("y", Data::F32(Vec::new()));
    }
    let mut sorted = x.to_vec();
    sorted.sort_by(f32::total_cmp);
    sorted.dedup_by(|a, b| a.total_cmp(b).is_eq());
    let rank = |v: f32| {
        sorted
            .binary_search_by(|s| s.total_cmp(&v))
            .expect("every value is in the table")
    };
    let mut counts = Fenwick::new(sorted.len());
    // The window of y[0]: x[0] for j = -r..=0, then x[min(j, n - 1)] for j = 1..=r.
    counts.add(rank(x[0]), r + 1);
    let inside = r.min(n as u128 - 1) as usize;
    for &v in &x[1..=inside] {
        counts.add(rank(v), 1);
    }
    counts.add(rank(x[n - 1]), r - inside as u128);
    let at = |j: i128| x[j.clamp(0, n as i128 - 1) as usize];
    let y = (0..n as i128)
        .map(|i| {
            let median = sorted[counts.find(r)];
            // Slide to i + 1: x[i - r] leaves, x[i + r + 1] comes in.
            counts.remove(rank(at(i - r as i128)));
            counts.add(rank(at(i + r as i128 + 1)), 1);
            median
        })
        .collect();
    out("y", Data::F32(y))
}

/// Counts by position with prefix sums in O(log n): the window's values by rank.
struct Fenwick {
    tree: Vec<u128>,
}

impl Fenwick {
    fn new(len: usize) -> Fenwick {
        Fenwick {
            tree: vec![0; len + 1],
        }
    }

    fn add(&mut self, at: usize, count: u128) {
        let mut i = at + 1;
        while i < self.tree.len() {
            self.tree[i] += count;
            i += i & i.wrapping_neg();
        }
    }

    fn remove(&mut self, at: usize) {
        let mut i = at + 1;
        while i < self.tree.len() {
            self.tree[i] -= 1;
            i += i & i.wrapping_neg();
        }
    }

    /// The position of the k-th value (from 0): the first whose prefix count exceeds `k`.
    fn find(&self, mut k: u128) -> usize {
        let (mut pos, mut step) = (0, (self.tree.len() - 1).next_power_of_two());
        while step > 0 {
            if pos + step < self.tree.len() && self.tree[pos + step] <= k {
                pos += step;
                k -= self.tree[pos];
            }
            step /= 2;
        }
        pos
    }
}

// Exercises 24-30

/// `bins` counters: `counts[v % bins]` is how many values `v` fall into that bin.
fn histogram_mod(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let bins = param(p, "bins");
    let mut counts = vec![0u32; bins];
    if bins > 0 {
        for &v in inputs[0].data.as_u32() {
            counts[v as usize % bins] += 1;
        }
    }
    out("counts", Data::U32(counts))
}

/// `y[i] = c[0] + c[1] x[i] + ... + c[terms - 1] x[i]^(terms - 1)`, by Horner's rule in f64.
fn polyval(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (x, c) = (inputs[0].data.as_f32(), inputs[1].data.as_f32());
    let y = x
        .iter()
        .map(|&v| {
            c.iter()
                .rev()
                .fold(0f64, |acc, &k| acc * v as f64 + k as f64) as f32
        })
        .collect();
    out("y", Data::F32(y))
}

/// How many diffusion steps `diffuse16` takes (the 28-cluster-dsmem kernel's `STEPS`).
pub const DIFFUSE_STEPS: usize = 16;

/// DIFFUSE_STEPS rounds of the 3-point average (1/4, 1/2, 1/4) along each row of a row-major
/// `rows x cols` matrix, the row's ends clamped, in f64.
fn diffuse16(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let cols = param(p, "cols");
    let x = inputs[0].data.as_f32();
    let mut y = Vec::with_capacity(x.len());
    for row in x.chunks(cols.max(1)) {
        let mut v: Vec<f64> = row.iter().map(|&a| a as f64).collect();
        for _ in 0..DIFFUSE_STEPS {
            let at = |i: isize| v[i.clamp(0, cols as isize - 1) as usize];
            v = (0..cols as isize)
                .map(|i| 0.25 * at(i - 1) + 0.5 * at(i) + 0.25 * at(i + 1))
                .collect();
        }
        y.extend(v.iter().map(|&a| a as f32));
    }
    out("y", Data::F32(y))
}

// Exercises 58-59

/// How many samples `wma64` averages (the 58-registers kernel's `TAPS`).
pub const WMA_TAPS: usize = 64;

/// A weighted moving average down each column of a time-major `steps x channels` matrix (sample `t`
/// of channel `c` at `t * channels + c`): `y[t][c]` is the sum over `k < WMA_TAPS` of
/// `(WMA_TAPS - k) * x[max(t - k, 0)][c]` over `1 + 2 + ... + WMA_TAPS`. The newest sample weighs
/// most; before its first sample a channel is taken to hold that sample. In f64.
fn wma64(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (steps, channels) = (param(p, "steps"), param(p, "channels"));
    let x = inputs[0].data.as_f32();
    let total = (WMA_TAPS * (WMA_TAPS + 1) / 2) as f64;
    let mut y = vec![0f32; steps * channels];
    for t in 0..steps {
        for c in 0..channels {
            let sum: f64 = (0..WMA_TAPS)
                .map(|k| (WMA_TAPS - k) as f64 * x[t.saturating_sub(k) * channels + c] as f64)
                .sum();
            y[t * channels + c] = (sum / total) as f32;
        }
    }
    out("y", Data::F32(y))
}

/// The fields of a `kinetic-energy16` particle, one column of `n` floats each, in this order (the
/// 59-aos-soa exercise's `Field`): field `f` of particle `i` at `f * n + i`.
pub const PARTICLE_FIELDS: [&str; 16] = [
    "x",
    "y",
    "z",
    "vx",
    "vy",
    "vz",
    "ax",
    "ay",
    "az",
    "mass",
    "charge",
    "radius",
    "density",
    "pressure",
    "temperature",
    "age",
];

/// The kinetic energy of each particle, `0.5 * mass * (vx^2 + vy^2 + vz^2)`, from the 16 columns of
/// PARTICLE_FIELDS, in f64.
fn kinetic_energy16(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let n = param(p, "n");
    let fields = inputs[0].data.as_f32();
    let column = |name: &str| {
        let f = PARTICLE_FIELDS
            .iter()
            .position(|&g| g == name)
            .expect("a field of PARTICLE_FIELDS");
        &fields[f * n..(f + 1) * n]
    };
    let (vx, vy, vz, mass) = (column("vx"), column("vy"), column("vz"), column("mass"));
    let e = (0..n)
        .map(|i| {
            let v2 = (vx[i] as f64).powi(2) + (vy[i] as f64).powi(2) + (vz[i] as f64).powi(2);
            (0.5 * mass[i] as f64 * v2) as f32
        })
        .collect();
    out("e", Data::F32(e))
}

// Exercises 60-61

/// The inclusive prefix sum: `y[i] = x[0] + ... + x[i]`, accumulated in f64.
fn prefix_sum(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let mut acc = 0f64;
    out(
        "y",
        Data::F32(
            inputs[0]
                .data
                .as_f32()
                .iter()
                .map(|&v| {
                    acc += v as f64;
                    acc as f32
                })
                .collect(),
        ),
    )
}

/// A 3 x 3 convolution layer, zero padding, stride 1: `x` is `cin` planes of `height x width`
/// (row-major), `w` is `cout` filters of `cin x 3 x 3`, and `y[o][r][c]` is the sum over `i`, `dr`,
/// `dc` of `w[o][i][dr][dc] * x[i][r + dr - 1][c + dc - 1]` (a cross-correlation, as networks
/// compute it), in f64.
fn conv3x3(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (cin, cout, h, w) = (
        param(p, "cin"),
        param(p, "cout"),
        param(p, "height"),
        param(p, "width"),
    );
    let (x, k) = (inputs[0].data.as_f32(), inputs[1].data.as_f32());
    let mut y = vec![0f32; cout * h * w];
    for o in 0..cout {
        for r in 0..h {
            for c in 0..w {
                let mut sum = 0f64;
                for i in 0..cin {
                    for dr in 0..3 {
                        for dc in 0..3 {
                            let (rr, cc) = ((r + dr).wrapping_sub(1), (c + dc).wrapping_sub(1));
                            if rr < h && cc < w {
                                sum += k[((o * cin + i) * 3 + dr) * 3 + dc] as f64
                                    * x[(i * h + rr) * w + cc] as f64;
                            }
                        }
                    }
                }
                y[(o * h + r) * w + c] = sum as f32;
            }
        }
    }
    out("y", Data::F32(y))
}

// Exercise 62

/// `steps` explicit steps of heat diffusion along each rod of a row-major `rods x cells` matrix:
/// each interior cell becomes `u + 0.25 * (left - 2 u + right)`, the two end cells of a rod held
/// fixed. In f32 and in that order, as the GPU computes it: both products (by 2, by 1/4) are exact,
/// so a fused multiply-add rounds the same and the answers agree to the bit.
fn heat_steps(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (cells, steps) = (param(p, "cells"), param(p, "steps"));
    let mut u = inputs[0].data.as_f32().to_vec();
    if cells > 2 {
        for rod in u.chunks_mut(cells) {
            heat_rod(rod, steps);
        }
    }
    out("u", Data::F32(u))
}

/// One rod after `steps` steps. A step is a fixed map on finitely many states, so the rod repeats
/// itself from some step on (mostly it freezes: every change rounds to nothing). The state is saved
/// at steps 1, 2, 4, 8, ... (Brent's cycle finding); once the rod is back at the saved state, the
/// steps left are taken modulo the period. A manifest may ask for 2^31 steps: this costs what the
/// rod takes to settle.
fn heat_rod(rod: &mut [f32], steps: usize) {
    let n = rod.len();
    let (mut cur, mut next, mut saved) = (rod.to_vec(), rod.to_vec(), rod.to_vec());
    let (mut t, mut saved_at, mut left) = (0usize, 0usize, steps);
    while left > 0 {
        for i in 1..n - 1 {
            next[i] = cur[i] + 0.25 * (cur[i - 1] - 2.0 * cur[i] + cur[i + 1]);
        }
        std::mem::swap(&mut cur, &mut next);
        (t, left) = (t + 1, left - 1);
        if cur
            .iter()
            .zip(&saved)
            .all(|(a, b)| a.to_bits() == b.to_bits())
        {
            left %= t - saved_at;
        } else if t.is_power_of_two() {
            saved.copy_from_slice(&cur);
            saved_at = t;
        }
    }
    rod.copy_from_slice(&cur);
}

// Exercise 63

/// The room's temperature and the share of a body's gap to it that one time step of `cooling`
/// closes (the 63-transfers program's AMBIENT and RATE). Both are exact in f32, and so are
/// 1 - RATE and RATE * AMBIENT.
pub const COOLING_AMBIENT: f32 = 20.0;
pub const COOLING_RATE: f32 = 1.0 / 1024.0;

/// Newton's law of cooling: each body's temperature after `steps` explicit time steps of
/// `t += RATE * (AMBIENT - t)`, each step the single-precision fused multiply-add
/// `fma(t, 1 - RATE, RATE * AMBIENT)` the GPU does: the same bits as `fmaf`. A step that leaves `t`
/// as it was leaves it so for good, so the loop stops there: a body between 0 and 100 degrees
/// settles within 11,500 steps, and a case of 2^31 steps costs no more than that.
fn cooling(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let steps = param(p, "steps");
    let (a, b) = (1.0 - COOLING_RATE, COOLING_RATE * COOLING_AMBIENT);
    let settle = |mut t: f32| {
        for _ in 0..steps {
            let next = t.mul_add(a, b);
            if next.to_bits() == t.to_bits() {
                break;
            }
            t = next;
        }
        t
    };
    out(
        "y",
        Data::F32(inputs[0].data.as_f32().iter().map(|&t| settle(t)).collect()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, i64)]) -> Params {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }
    fn f32s(name: &str, v: Vec<f32>) -> Buffer {
        Buffer {
            name: name.into(),
            data: Data::F32(v),
        }
    }

    #[test]
    fn the_performance_track_references() {
        let m = f32s("m", vec![1., 2., 3., 4., 5., 6.]);
        assert_eq!(
            row_sums(
                &params(&[("rows", 2), ("cols", 3)]),
                std::slice::from_ref(&m)
            )[0]
            .data,
            Data::F32(vec![6., 15.])
        );
        assert_eq!(
            half_transpose(&params(&[("rows", 2), ("cols", 3)]), &[m])[0].data,
            Data::F32(vec![0.5, 2., 1., 2.5, 1.5, 3.])
        );
        // 2 x 2 times 2 x 1.
        let c = matmul(
            &params(&[("m", 2), ("n", 1), ("k", 2)]),
            &[f32s("a", vec![1., 2., 3., 4.]), f32s("b", vec![5., 6.])],
        );
        assert_eq!(c[0].data, Data::F32(vec![17., 39.]));
        let h = unit_histogram256(
            &params(&[]),
            &[f32s("x", vec![0.0, 0.999_999, 1.0 / 256.0, 0.5])],
        );
        let Data::U32(bins) = &h[0].data else {
            panic!()
        };
        assert_eq!((bins[0], bins[1], bins[128], bins[255]), (1, 1, 1, 1));
        // The recurrences settle at their fixed points: 1 for even elements, 2/3 for odd.
        let y = relax_pairs(&params(&[]), &[f32s("x", vec![0.25, 0.25])]);
        let Data::F32(y) = &y[0].data else { panic!() };
        assert!(
            (y[0] - (1.0 - 0.75 * 0.999f32.powi(RELAX_STEPS as i32))).abs() < 1e-4
                && (y[1] - 2.0 / 3.0).abs() < 1e-6,
            "{y:?}"
        );
        assert_eq!(
            two_x_plus_one(&params(&[]), &[f32s("x", vec![0.5])])[0].data,
            Data::F32(vec![2.0])
        );
    }

    #[test]
    fn transpose_of_a_2x3() {
        let r = transpose(
            &params(&[("rows", 2), ("cols", 3)]),
            &[f32s("in", vec![1., 2., 3., 4., 5., 6.])],
        );
        assert_eq!(r[0].data, Data::F32(vec![1., 4., 2., 5., 3., 6.]));
    }

    #[test]
    fn relu_uses_the_channel_of_each_element() {
        let p = params(&[("batch", 1), ("channels", 2), ("hw", 2)]);
        let r = scale_bias_relu(
            &p,
            &[
                f32s("x", vec![1., -1., 1., -1.]),
                f32s("scale", vec![2., 3.]),
                f32s("bias", vec![0., 1.]),
            ],
        );
        assert_eq!(r[0].data, Data::F32(vec![2., 0., 4., 0.]));
    }

    #[test]
    fn smooth_clamps_the_ends() {
        let r = smooth3(&params(&[("n", 3)]), &[f32s("x", vec![4., 8., 0.])]);
        assert_eq!(r[0].data, Data::F32(vec![5., 5., 2.]));
    }

    #[test]
    fn histogram_bins_by_high_bits() {
        let r = histogram256(
            &Params::new(),
            &[Buffer {
                name: "x".into(),
                data: Data::U32(vec![0, 15, 16, 4095]),
            }],
        );
        let Data::U32(b) = &r[0].data else { panic!() };
        assert_eq!((b[0], b[1], b[255], b.iter().sum::<u32>()), (2, 1, 1, 4));
    }

    #[test]
    fn frame_sums_count_per_tile_position_like_per_pixel() {
        let tile: Vec<u32> = (0..12).map(|v| v * 23 % 256).collect();
        // 300 frames: frames 256 and later repeat the sums of 0 and later.
        let p = params(&[("frames", 300), ("frame_len", 40), ("tile_len", 12)]);
        let got = frame_sums(
            &p,
            &[Buffer {
                name: "tile".into(),
                data: Data::U32(tile.clone()),
            }],
        );
        let want: Vec<u32> = (0..300u32)
            .map(|f| (0..40).map(|px| (tile[px % 12] + f) & 255).sum())
            .collect();
        assert_eq!(got[0].data, Data::U32(want));
    }

    #[test]
    fn segments_and_windows() {
        let x: Vec<f32> = (0..300).map(|v| v as f32).collect();
        let got = segment_sums(
            &params(&[("n", 300), ("segments", 2)]),
            &[f32s("x", x.clone())],
        );
        assert_eq!(
            got[0].data,
            Data::F32(vec![
                (0..256).sum::<i32>() as f32,
                (256..300).sum::<i32>() as f32
            ])
        );
        let w = window(
            &params(&[("n", 300), ("offset", 5), ("len", 3)]),
            &[f32s("x", x)],
        );
        assert_eq!(w[0].data, Data::F32(vec![5.0, 6.0, 7.0]));
    }

    #[test]
    fn blur_of_a_constant_image_is_the_constant() {
        let got = box_blur3(
            &params(&[("width", 5), ("height", 3)]),
            &[f32s("img", vec![2.0; 15])],
        );
        assert_eq!(got[0].data, Data::F32(vec![2.0; 15]));
    }

    #[test]
    fn exercises_24_to_30_references() {
        let h = histogram_mod(
            &params(&[("n", 4), ("bins", 3)]),
            &[Buffer {
                name: "values".into(),
                data: Data::U32(vec![0, 4, 7, 65535]),
            }],
        );
        assert_eq!(h[0].data, Data::U32(vec![2, 2, 0]));
        // 1 + 2x + 3x^2 at x = 2 and x = -1.
        let y = polyval(
            &params(&[]),
            &[f32s("x", vec![2.0, -1.0]), f32s("c", vec![1.0, 2.0, 3.0])],
        );
        assert_eq!(y[0].data, Data::F32(vec![17.0, 2.0]));
        // A constant row stays constant; a row of one cell too; a spike spreads and keeps its sum.
        let c = diffuse16(
            &params(&[("rows", 2), ("cols", 5)]),
            &[f32s("x", vec![1.5; 10])],
        );
        assert_eq!(c[0].data, Data::F32(vec![1.5; 10]));
        assert_eq!(
            diffuse16(
                &params(&[("rows", 1), ("cols", 1)]),
                &[f32s("x", vec![0.25])]
            )[0]
            .data,
            Data::F32(vec![0.25])
        );
        let mut spike = vec![0.0f32; 64];
        spike[32] = 1.0;
        let Data::F32(s) =
            &diffuse16(&params(&[("rows", 1), ("cols", 64)]), &[f32s("x", spike)])[0].data
        else {
            panic!()
        };
        // 16 steps of (1 2 1) / 4 are the binomial weights C(32, 16 + d) / 2^32.
        assert!(
            (s[32] as f64 - 601080390.0 / 4294967296.0).abs() < 1e-7
                && (s.iter().sum::<f32>() - 1.0).abs() < 1e-5,
            "{s:?}"
        );
    }

    // Exercises 18-23
    #[test]
    fn the_median_window_agrees_with_sorting_each_window() {
        let naive = |x: &[f32], r: usize| -> Vec<f32> {
            let n = x.len() as isize;
            (0..n)
                .map(|i| {
                    let mut w: Vec<f32> = (i - r as isize..=i + r as isize)
                        .map(|j| x[j.clamp(0, n - 1) as usize])
                        .collect();
                    w.sort_by(f32::total_cmp);
                    w[r]
                })
                .collect()
        };
        let x: Vec<f32> = (0..97u32)
            .map(|i| ((i * 7919) % 31) as f32 - 15.0)
            .collect();
        for (n, r) in [
            (1, 0),
            (1, 3),
            (2, 1),
            (10, 0),
            (10, 4),
            (10, 9),
            (10, 25),
            (97, 3),
            (97, 48),
            (97, 200),
        ] {
            let got = median_window(
                &params(&[("n", n as i64), ("r", r as i64)]),
                &[f32s("x", x[..n].to_vec())],
            );
            assert_eq!(
                got[0].data,
                Data::F32(naive(&x[..n], r)),
                "n = {n}, r = {r}"
            );
        }
        // A radius the fuzz test asks for: the ends' repeats are counts, not copies. Around y[0],
        // r + 1 ones, one 9 and r - 1 fives: the middle value is a 1; further on, a 5.
        let huge = median_window(
            &params(&[("n", 3), ("r", 1 << 31)]),
            &[f32s("x", vec![1., 9., 5.])],
        );
        assert_eq!(huge[0].data, Data::F32(vec![1., 5., 5.]));
    }

    #[test]
    fn the_median_window_clamps_at_the_ends() {
        let x = f32s("x", vec![5., 1., 4., 2., 3.]);
        // r = 1: [5 5 1] [5 1 4] [1 4 2] [4 2 3] [2 3 3].
        assert_eq!(
            median_window(&params(&[("n", 5), ("r", 1)]), std::slice::from_ref(&x))[0].data,
            Data::F32(vec![5., 4., 2., 3., 3.])
        );
        assert_eq!(
            median_window(&params(&[("n", 5), ("r", 0)]), std::slice::from_ref(&x))[0].data,
            Data::F32(vec![5., 1., 4., 2., 3.])
        );
        assert_eq!(
            median_window(&params(&[("n", 1), ("r", 5)]), &[f32s("x", vec![7.])])[0].data,
            Data::F32(vec![7.])
        );
    }

    #[test]
    fn exercises_58_and_59_references() {
        // One channel, a step up from 0 to 1 at t = 1: after k steps the weights of the k newest
        // samples, (64 + 63 + ... + (65 - k)) / 2080; from t = 64 on, all of them.
        let x: Vec<f32> = (0..70).map(|t| if t == 0 { 0.0 } else { 1.0 }).collect();
        let Data::F32(y) =
            &wma64(&params(&[("steps", 70), ("channels", 1)]), &[f32s("x", x)])[0].data
        else {
            panic!()
        };
        assert_eq!((y[0], y[1], y[69]), (0.0, (64.0 / 2080.0) as f32, 1.0));
        assert_eq!(y[2], ((64.0 + 63.0) / 2080.0) as f32);
        // Two channels are averaged apart: a constant channel stays constant beside a ramp.
        let x: Vec<f32> = (0..6).flat_map(|t| [0.5, t as f32]).collect();
        let Data::F32(y) =
            &wma64(&params(&[("steps", 6), ("channels", 2)]), &[f32s("x", x)])[0].data
        else {
            panic!()
        };
        assert_eq!((y[0], y[2], y[10]), (0.5, 0.5, 0.5));
        // The ramp at t = 1: 64 * 1 + 2016 * 0 (the 63 older samples are the first, 0).
        assert_eq!((y[1], y[3]), (0.0, (64.0 / 2080.0) as f32));
        // Two particles: columns of 2, field-major; only vx, vy, vz and mass count.
        let mut fields = vec![9.0f32; 32];
        for (name, a, b) in [
            ("vx", 1.0, 0.0),
            ("vy", 2.0, 0.0),
            ("vz", 2.0, 3.0),
            ("mass", 4.0, 0.5),
        ] {
            let f = PARTICLE_FIELDS.iter().position(|&g| g == name).unwrap();
            (fields[2 * f], fields[2 * f + 1]) = (a, b);
        }
        let e = kinetic_energy16(&params(&[("n", 2)]), &[f32s("fields", fields)]);
        assert_eq!(e[0].data, Data::F32(vec![18.0, 2.25]));
    }

    #[test]
    fn exercises_60_and_61_references() {
        let y = prefix_sum(
            &params(&[("n", 4)]),
            &[f32s("x", vec![1.0, 0.5, 0.25, 2.0])],
        );
        assert_eq!(y[0].data, Data::F32(vec![1.0, 1.5, 1.75, 3.75]));
        assert_eq!(
            prefix_sum(&params(&[("n", 0)]), &[f32s("x", vec![])])[0].data,
            Data::F32(vec![])
        );
        // One 3 x 3 channel of 1..9 with a filter that is 1 at its centre and 1 at its top left:
        // each output is its own pixel plus the one up and to the left (0 past the edge).
        let x: Vec<f32> = (1..=9).map(|v| v as f32).collect();
        let mut k = vec![0f32; 9];
        (k[4], k[0]) = (1.0, 1.0);
        let y = conv3x3(
            &params(&[("cin", 1), ("cout", 1), ("height", 3), ("width", 3)]),
            &[f32s("x", x.clone()), f32s("w", k)],
        );
        assert_eq!(
            y[0].data,
            Data::F32(vec![1., 2., 3., 4., 6., 8., 7., 12., 14.])
        );
        // Two input channels into two filters: all-ones weights sum the 3 x 3 window of both
        // channels; the second filter is zero.
        let x2: Vec<f32> = x.iter().chain(&x).copied().collect();
        let w2: Vec<f32> = [vec![1f32; 18], vec![0f32; 18]].concat();
        let y = conv3x3(
            &params(&[("cin", 2), ("cout", 2), ("height", 3), ("width", 3)]),
            &[f32s("x", x2), f32s("w", w2)],
        );
        let Data::F32(y) = &y[0].data else { panic!() };
        assert_eq!(
            (y[0], y[4], y[8], &y[9..]),
            (2.0 * 12.0, 2.0 * 45.0, 2.0 * 28.0, &[0f32; 9][..])
        );
    }

    #[test]
    fn exercise_62_reference() {
        let heat = |rods: i64, cells: i64, steps: i64, u0: Vec<f32>| {
            let Data::F32(u) = heat_steps(
                &params(&[("rods", rods), ("cells", cells), ("steps", steps)]),
                &[f32s("u0", u0)],
            )
            .remove(0)
            .data
            else {
                panic!()
            };
            u
        };
        // A constant rod stays constant; rods of one or two cells are all ends; no steps, no change.
        assert_eq!(heat(2, 5, 7, vec![0.75; 10]), vec![0.75; 10]);
        assert_eq!(heat(3, 1, 9, vec![0.1, 0.2, 0.3]), vec![0.1, 0.2, 0.3]);
        assert_eq!(
            heat(2, 2, 9, vec![0.1, 0.2, 0.3, 0.4]),
            vec![0.1, 0.2, 0.3, 0.4]
        );
        assert_eq!(
            heat(1, 4, 0, vec![0.1, 0.9, 0.2, 0.8]),
            vec![0.1, 0.9, 0.2, 0.8]
        );
        // Three cells, ends 0 and 0.5: each step halves the middle's distance to their mean, 0.25
        // (1 + 0.25 (0 - 2 + 0.5) = 0.625, exact); the second rod is constant and stays so.
        let rods = |steps| heat(2, 3, steps, vec![0.0, 1.0, 0.5, 0.3, 0.3, 0.3]);
        assert_eq!(rods(1), vec![0.0, 0.625, 0.5, 0.3, 0.3, 0.3]);
        assert_eq!(rods(3), vec![0.0, 0.25 + 0.75 / 8.0, 0.5, 0.3, 0.3, 0.3]);
        // 2^31 steps: the middle settles at 0.25 exactly, and the shortcut makes that quick.
        assert_eq!(rods(1 << 31), vec![0.0, 0.25, 0.5, 0.3, 0.3, 0.3]);
        // The shortcut changes no bit: step by step until the rods stop changing, then 2^31 steps.
        let u0: Vec<f32> = (0..48u32)
            .map(|i| ((i * 7919) % 97) as f32 / 97.0)
            .collect();
        let (mut u, mut taken) = (u0.clone(), 0);
        loop {
            let before = u.clone();
            for r in 0..3 {
                for i in r * 16 + 1..r * 16 + 15 {
                    u[i] = before[i] + 0.25 * (before[i - 1] - 2.0 * before[i] + before[i + 1]);
                }
            }
            taken += 1;
            if u == before {
                break;
            }
            assert!(
                taken < 1_000_000,
                "16 cells settle long before a million steps"
            );
        }
        assert_eq!(
            heat(3, 16, 37, u0.clone()),
            heat(3, 16, 36, heat(3, 16, 1, u0.clone()))
        );
        assert_eq!(heat(3, 16, taken, u0.clone()), u);
        assert_eq!(heat(3, 16, 1 << 31, u0), u);
    }

    #[test]
    fn exercise_63_reference() {
        let cool = |x: Vec<f32>, steps: i64| {
            let Data::F32(y) = cooling(
                &params(&[("n", x.len() as i64), ("steps", steps)]),
                &[f32s("x", x)],
            )
            .remove(0)
            .data
            else {
                panic!()
            };
            y
        };
        let x = vec![0.0, 37.5, 100.0];
        assert_eq!(cool(x.clone(), 0), x);
        // One step from 100: (100 * 1023 + 20) / 1024, exact.
        assert_eq!(cool(vec![100.0], 1), vec![99.921875]);
        // The early stop changes no bit: 20,000 steps one by one give the same as the loop that may stop.
        let naive = |t: f32, steps: usize| {
            (0..steps).fold(t, |t, _| {
                t.mul_add(1.0 - COOLING_RATE, COOLING_RATE * COOLING_AMBIENT)
            })
        };
        assert_eq!(
            cool(x.clone(), 2048),
            x.iter().map(|&t| naive(t, 2048)).collect::<Vec<_>>()
        );
        assert_eq!(
            cool(x.clone(), 20_000),
            x.iter().map(|&t| naive(t, 20_000)).collect::<Vec<_>>()
        );
        // 2048 steps close 1 - (1023/1024)^2048, about 1 - e^-2, of the gap to the room; after 2^31
        // every body sits within a rounding step of 20 degrees.
        let left = (1.0 - 1.0 / 1024.0f64).powi(2048);
        for (t, y) in x.iter().zip(cool(x.clone(), 2048)) {
            assert!(
                (y as f64 - (20.0 + (*t as f64 - 20.0) * left)).abs() < 1e-3,
                "{t} -> {y}"
            );
        }
        assert!(cool(x, 1 << 31)
            .iter()
            .all(|y| (y - 20.0).abs() <= 1.0 / 1024.0));
    }
}
