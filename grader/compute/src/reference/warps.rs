//! References of exercises 36-constant-symbol, 37-shfl-width, 42-launch-resources, 71-constant-divergence: constant memory, warp shuffles, a launch's resources.

#[allow(unused_imports)]
use super::*;

pub(super) const REFERENCES: &[(&str, ReferenceFn)] = &[
    ("fir-taps", fir_taps),
    ("row-dots", row_dots),
    ("affine-jump4", affine_jump4),
    ("curve-lerp4096", curve_lerp4096),
];

pub(super) const SIGNATURES: &[(&str, Signature)] = &[
    (
        "fir-taps",
        Signature {
            inputs: &[("x", DType::F32, "n"), ("h", DType::F64, "taps")],
            outputs: &[("y", DType::F32, "n")],
        },
    ),
    (
        "row-dots",
        Signature {
            inputs: &[
                ("a", DType::F32, "rows * cols"),
                ("b", DType::F32, "rows * cols"),
            ],
            outputs: &[("dots", DType::F32, "rows")],
        },
    ),
    (
        "affine-jump4",
        Signature {
            inputs: &[
                ("a", DType::F64, "16 * count"),
                ("b", DType::F64, "4 * count"),
                ("x", DType::F64, "4 * count"),
            ],
            outputs: &[("y", DType::F64, "4 * count")],
        },
    ),
    (
        "curve-lerp4096",
        Signature {
            inputs: &[("x", DType::F32, "n"), ("curve", DType::F32, "4097")],
            outputs: &[("y", DType::F32, "n")],
        },
    ),
];

/// 36-constant-symbol: a centred FIR filter, `y[i] = sum_k h[k] * x[i + k - taps / 2]` with zeros
/// beyond the ends, the taps rounded to f32 first (the kernel reads them as floats), summed in f64.
fn fir_taps(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (n, taps) = (param(p, "n"), param(p, "taps"));
    let x = inputs[0].data.as_f32();
    let h: Vec<f64> = inputs[1]
        .data
        .as_f64()
        .iter()
        .map(|&v| v as f32 as f64)
        .collect();
    let half = taps / 2;
    let y = (0..n)
        .map(|i| {
            // The taps whose sample lies inside the signal: 0 <= i + k - half < n.
            let (lo, hi) = (half.saturating_sub(i), taps.min(n + half - i));
            (lo..hi).map(|k| h[k] * x[i + k - half] as f64).sum::<f64>() as f32
        })
        .collect();
    out("y", Data::F32(y))
}

/// 37-shfl-width: the dot product of row r of `a` with row r of `b` (both `rows x cols`,
/// row-major), in f64.
fn row_dots(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (rows, cols) = (param(p, "rows"), param(p, "cols"));
    let (a, b) = (inputs[0].data.as_f32(), inputs[1].data.as_f32());
    let dots = (0..rows)
        .map(|r| {
            let (ra, rb) = (&a[r * cols..(r + 1) * cols], &b[r * cols..(r + 1) * cols]);
            ra.iter()
                .zip(rb)
                .map(|(&u, &v)| u as f64 * v as f64)
                .sum::<f64>() as f32
        })
        .collect();
    out("dots", Data::F32(dots))
}

/// 42-launch-resources: for each of `count` elements, the step x -> A x + b (A 4 x 4, b 4) squared
/// `squarings` times ((A, b) -> (A A, A b + b), the map of two steps), then applied to the
/// element's x: the state after 2^squarings steps. Every buffer is a structure of arrays: entry
/// (i, j) of element e's A is `a[(4 * i + j) * count + e]`, entry i of its b is
/// `b[i * count + e]`. In f64, in the kernel's order of operations (the GPU fuses some of them into
/// FMAs: differences of a few units in 1e-16).
fn affine_jump4(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (count, squarings) = (param(p, "count"), param(p, "squarings"));
    let (a, b, x) = (
        inputs[0].data.as_f64(),
        inputs[1].data.as_f64(),
        inputs[2].data.as_f64(),
    );
    let mut y = vec![0f64; 4 * count];
    for e in 0..count {
        let mut m = [[0f64; 4]; 4];
        let mut v = [0f64; 4];
        for i in 0..4 {
            for j in 0..4 {
                m[i][j] = a[(4 * i + j) * count + e];
            }
            v[i] = b[i * count + e];
        }
        for _ in 0..squarings {
            let mut c = [0f64; 4];
            let mut q = [[0f64; 4]; 4];
            for i in 0..4 {
                c[i] = m[i][0] * v[0] + m[i][1] * v[1] + m[i][2] * v[2] + m[i][3] * v[3] + v[i];
                for j in 0..4 {
                    q[i][j] = m[i][0] * m[0][j]
                        + m[i][1] * m[1][j]
                        + m[i][2] * m[2][j]
                        + m[i][3] * m[3][j];
                }
            }
            m = q;
            v = c;
        }
        let xe: Vec<f64> = (0..4).map(|i| x[i * count + e]).collect();
        for i in 0..4 {
            y[i * count + e] =
                m[i][0] * xe[0] + m[i][1] * xe[1] + m[i][2] * xe[2] + m[i][3] * xe[3] + v[i];
        }
    }
    out("y", Data::F64(y))
}

/// Segments of the 71-constant-divergence curve: 4096, so the table has 4097 entries.
const CURVE_SEGMENTS: usize = 4096;

/// 71-constant-divergence: each sample clamped to [0, 1], scaled by 4096 (exact), split into a
/// segment k <= 4095 and a fraction f, and interpolated between table entries k and k + 1 with one
/// fused multiply-add, exactly as the kernel computes it in f32: the same bits.
fn curve_lerp4096(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (x, c) = (inputs[0].data.as_f32(), inputs[1].data.as_f32());
    let y = x
        .iter()
        .map(|&v| {
            let u = v.clamp(0.0, 1.0) * CURVE_SEGMENTS as f32;
            let k = (u as usize).min(CURVE_SEGMENTS - 1);
            let f = u - k as f32;
            f.mul_add(c[k + 1] - c[k], c[k])
        })
        .collect();
    out("y", Data::F32(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, i64)]) -> Params {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }
    fn buffer(name: &str, data: Data) -> Buffer {
        Buffer {
            name: name.into(),
            data,
        }
    }
    fn f32_out(r: &[Buffer]) -> Vec<f32> {
        match &r[0].data {
            Data::F32(v) => v.clone(),
            other => panic!("expected f32, got {:?}", other.dtype()),
        }
    }
    fn f64_out(r: &[Buffer]) -> Vec<f64> {
        match &r[0].data {
            Data::F64(v) => v.clone(),
            other => panic!("expected f64, got {:?}", other.dtype()),
        }
    }

    #[test]
    fn fir_is_centred_with_zeros_beyond_the_ends() {
        // Three taps centred on i: y[i] = 1 x[i-1] + 2 x[i] + 3 x[i+1].
        let x = buffer("x", Data::F32(vec![1.0, 10.0, 100.0]));
        let h = buffer("h", Data::F64(vec![1.0, 2.0, 3.0]));
        let y = fir_taps(&params(&[("n", 3), ("taps", 3)]), &[x.clone(), h]);
        assert_eq!(f32_out(&y), vec![32.0, 321.0, 210.0]);
        // Two taps: half = 1, so y[i] = h0 x[i-1] + h1 x[i].
        let h2 = buffer("h", Data::F64(vec![1.0, -1.0]));
        let y = fir_taps(&params(&[("n", 3), ("taps", 2)]), &[x.clone(), h2]);
        assert_eq!(f32_out(&y), vec![-1.0, -9.0, -90.0]);
        // More taps than samples: only the ones over the signal count.
        let h5 = buffer("h", Data::F64(vec![1.0, 1.0, 1.0, 1.0, 1.0]));
        let one = buffer("x", Data::F32(vec![7.0]));
        let y = fir_taps(&params(&[("n", 1), ("taps", 5)]), &[one, h5]);
        assert_eq!(f32_out(&y), vec![7.0]);
    }

    #[test]
    fn fir_uses_the_taps_as_floats() {
        // 1 + 2^-30 is 1.0 as a float: the kernel's tap, not the design's double.
        let h = buffer("h", Data::F64(vec![1.0 + 2f64.powi(-30)]));
        let x = buffer("x", Data::F32(vec![3.0]));
        let y = fir_taps(&params(&[("n", 1), ("taps", 1)]), &[x, h]);
        assert_eq!(f32_out(&y), vec![3.0]);
    }

    #[test]
    fn row_dots_pair_rows() {
        let a = buffer("a", Data::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
        let b = buffer("b", Data::F32(vec![1.0, 1.0, 1.0, 2.0, 0.0, -1.0]));
        let d = row_dots(&params(&[("rows", 2), ("cols", 3)]), &[a, b]);
        assert_eq!(f32_out(&d), vec![6.0, 2.0]);
        // 33 columns of ones: the whole row counts, not the first 16 lanes' columns.
        let ones = buffer("a", Data::F32(vec![1.0; 33]));
        let d = row_dots(&params(&[("rows", 1), ("cols", 33)]), &[ones.clone(), ones]);
        assert_eq!(f32_out(&d), vec![33.0]);
        let empty = buffer("a", Data::F32(vec![]));
        let d = row_dots(
            &params(&[("rows", 2), ("cols", 0)]),
            &[empty.clone(), empty],
        );
        assert_eq!(f32_out(&d), vec![0.0, 0.0]);
    }

    /// A structure-of-arrays batch of `count` copies of (m, v, x), element e's A scaled by 1/(e+1).
    fn batch(m: [[f64; 4]; 4], v: [f64; 4], x: [f64; 4], count: usize) -> Vec<Buffer> {
        let mut a = vec![0.0; 16 * count];
        let (mut b, mut xs) = (vec![0.0; 4 * count], vec![0.0; 4 * count]);
        for e in 0..count {
            for i in 0..4 {
                for j in 0..4 {
                    a[(4 * i + j) * count + e] = m[i][j] / (e + 1) as f64;
                }
                b[i * count + e] = v[i];
                xs[i * count + e] = x[i];
            }
        }
        vec![
            buffer("a", Data::F64(a)),
            buffer("b", Data::F64(b)),
            buffer("x", Data::F64(xs)),
        ]
    }

    #[test]
    fn affine_jump_is_two_to_the_k_steps() {
        let half = [
            [0.5, 0.0, 0.0, 0.0],
            [0.0, 0.5, 0.0, 0.0],
            [0.0, 0.0, 0.5, 0.0],
            [0.0, 0.0, 0.0, 0.5],
        ];
        let inputs = batch(half, [1.0, 0.0, 0.0, 0.0], [2.0; 4], 1);
        // No squaring: one step, A x + b.
        let y = affine_jump4(&params(&[("count", 1), ("squarings", 0)]), &inputs);
        assert_eq!(f64_out(&y), vec![2.0, 1.0, 1.0, 1.0]);
        // One squaring: two steps, [2, 1, 1, 1] then [2, 0.5, 0.5, 0.5].
        let y = affine_jump4(&params(&[("count", 1), ("squarings", 1)]), &inputs);
        assert_eq!(f64_out(&y), vec![2.0, 0.5, 0.5, 0.5]);
        // A full matrix, two elements: three squarings are eight plain steps, element by element.
        let m = [
            [0.1, 0.2, 0.0, 0.05],
            [0.0, 0.3, 0.1, 0.2],
            [0.2, 0.0, 0.1, 0.1],
            [0.05, 0.05, 0.05, 0.05],
        ];
        let (v, x0) = ([1.0, -2.0, 0.5, 3.0], [0.25, 0.5, -1.0, 2.0]);
        let inputs = batch(m, v, x0, 2);
        let y = f64_out(&affine_jump4(
            &params(&[("count", 2), ("squarings", 3)]),
            &inputs,
        ));
        for e in 0..2 {
            let mut s = x0;
            for _ in 0..8 {
                let mut t = [0.0; 4];
                for i in 0..4 {
                    t[i] = v[i] + (0..4).map(|j| m[i][j] / (e + 1) as f64 * s[j]).sum::<f64>();
                }
                s = t;
            }
            for i in 0..4 {
                assert!(
                    (y[i * 2 + e] - s[i]).abs() < 1e-12,
                    "element {e}: {y:?} vs {s:?}"
                );
            }
        }
    }

    #[test]
    fn curve_interpolates_and_clamps() {
        // A table of k at k: the curve is u = 4096 v itself, clamped to [0, 4096].
        let c: Vec<f32> = (0..=CURVE_SEGMENTS).map(|k| k as f32).collect();
        let x = vec![0.5, -1.0, 2.0, 1.0, 0.25 / 4096.0, 0.0];
        let y = curve_lerp4096(
            &params(&[("n", 6)]),
            &[buffer("x", Data::F32(x)), buffer("curve", Data::F32(c))],
        );
        assert_eq!(f32_out(&y), vec![2048.0, 0.0, 4096.0, 4096.0, 0.25, 0.0]);
        // Between two entries: a quarter of the way from 1 to 5 is 2.
        let mut c = vec![0.0f32; CURVE_SEGMENTS + 1];
        c[7] = 1.0;
        c[8] = 5.0;
        let y = curve_lerp4096(
            &params(&[("n", 1)]),
            &[
                buffer("x", Data::F32(vec![7.25 / 4096.0])),
                buffer("curve", Data::F32(c)),
            ],
        );
        assert_eq!(f32_out(&y), vec![2.0]);
    }
}
