//! References of exercises 35-dynpar-shared, 38-grid-sync, 68-graphs: dynamic parallelism, cooperative launches, CUDA graphs.

#[allow(unused_imports)]
use super::*;

pub(super) const REFERENCES: &[(&str, ReferenceFn)] = &[
    ("segment-equalize", segment_equalize),
    ("standardize", standardize),
    ("chain-top-mode", chain_top_mode),
];

pub(super) const SIGNATURES: &[(&str, Signature)] = &[
    (
        "segment-equalize",
        Signature {
            inputs: &[
                ("x", DType::U32, "segs * cap"),
                ("lens", DType::U32, "segs"),
            ],
            outputs: &[("y", DType::U32, "segs * cap")],
        },
    ),
    (
        "standardize",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("y", DType::F32, "n")],
        },
    ),
    (
        "chain-top-mode",
        Signature {
            inputs: &[("k", DType::F32, "n"), ("x0", DType::F32, "n")],
            outputs: &[("mode", DType::F32, "n"), ("lambda", DType::F32, "1")],
        },
    ),
];

// Exercise 35

/// The samples are 10-bit: 0..=1023.
const EQUALIZE_BINS: usize = 1024;

/// Histogram equalization of each of `segs` segments of 10-bit samples on its own (exact, in
/// integers). Segment s has a slot of `cap` samples at `x[s * cap]` and uses the first
/// `len = 1 + lens[s] % cap` of them; its sample v becomes `(cdf(v) * 1023) / len` (integer
/// division), cdf(v) counting the segment's samples that are at most v. The rest of the slot is 0.
fn segment_equalize(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (segs, cap) = (param(p, "segs"), param(p, "cap"));
    let (x, lens) = (inputs[0].data.as_u32(), inputs[1].data.as_u32());
    let mut y = vec![0u32; segs * cap];
    if cap > 0 {
        let top = (EQUALIZE_BINS - 1) as u64;
        let mut cdf = [0u64; EQUALIZE_BINS];
        for s in 0..segs {
            let len = 1 + lens[s] as usize % cap;
            let samples = &x[s * cap..s * cap + len];
            cdf.fill(0);
            for &v in samples {
                cdf[(v as usize).min(EQUALIZE_BINS - 1)] += 1;
            }
            for b in 1..EQUALIZE_BINS {
                cdf[b] += cdf[b - 1];
            }
            for (out, &v) in y[s * cap..s * cap + len].iter_mut().zip(samples) {
                *out = (cdf[(v as usize).min(EQUALIZE_BINS - 1)] * top / len as u64) as u32;
            }
        }
    }
    out("y", Data::U32(y))
}

// Exercise 38

/// What the variance is padded with before its square root, as a layer norm does.
const STANDARDIZE_EPS: f64 = 1e-5;

/// `y = (x - mean) / sqrt(var + 1e-5)` over the whole vector, the mean and the population variance
/// (two passes) in f64, as the GPU computes them (in double, in another order).
fn standardize(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let x = inputs[0].data.as_f32();
    let n = x.len().max(1) as f64;
    let mean = x.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
    let inv_std = 1.0 / (var + STANDARDIZE_EPS).sqrt();
    out(
        "y",
        Data::F32(
            x.iter()
                .map(|&v| ((v as f64 - mean) * inv_std) as f32)
                .collect(),
        ),
    )
}

// Exercise 68

/// `steps` steps of power iteration on the stiffness matrix of a chain of `n` unit masses: mass i
/// between spring k[i] on its left (k[0] to a wall) and k[i + 1] on its right (the last mass's
/// right end free), `(K x)_i = k[i] (x_i - x_{i-1}) + k[i+1] (x_i - x_{i+1})`. Each step
/// `y = K x`, `lambda = |y|`, `x = y / |y|`; `mode` is the last x, `lambda` the last |y| (0 for no
/// steps). In f64: the GPU's f32 rounding of a step is scaled away by the next normalisation, and
/// what it leaves in the direction of x stays near f32's epsilon times the steps.
fn chain_top_mode(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (n, steps) = (param(p, "n"), param(p, "steps"));
    let k: Vec<f64> = inputs[0].data.as_f32().iter().map(|&v| v as f64).collect();
    let mut x: Vec<f64> = inputs[1].data.as_f32().iter().map(|&v| v as f64).collect();
    let mut y = vec![0f64; n];
    let mut lambda = 0f64;
    for _ in 0..steps {
        for i in 0..n {
            let left = if i > 0 { x[i - 1] } else { 0.0 };
            let mut force = k[i] * (x[i] - left);
            if i + 1 < n {
                force += k[i + 1] * (x[i] - x[i + 1]);
            }
            y[i] = force;
        }
        lambda = y.iter().map(|v| v * v).sum::<f64>().sqrt();
        for (xi, yi) in x.iter_mut().zip(&y) {
            *xi = yi / lambda;
        }
    }
    vec![
        Buffer {
            name: "mode".to_string(),
            data: Data::F32(x.iter().map(|&v| v as f32).collect()),
        },
        Buffer {
            name: "lambda".to_string(),
            data: Data::F32(vec![lambda as f32]),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, i64)]) -> Params {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }
    fn buf(name: &str, data: Data) -> Buffer {
        Buffer {
            name: name.into(),
            data,
        }
    }
    fn f32s(out: &[Buffer], i: usize) -> Vec<f32> {
        match &out[i].data {
            Data::F32(v) => v.clone(),
            other => panic!("f32 expected, got {other:?}"),
        }
    }

    #[test]
    fn exercise_35_equalizes_each_segment_on_its_own() {
        // Two slots of 4: lens 3 and 9 use 1 + 3 % 4 = 4 and 1 + 9 % 4 = 2 samples.
        let x = vec![0, 0, 1023, 5, 7, 7, 100, 200];
        let y = segment_equalize(
            &params(&[("segs", 2), ("cap", 4)]),
            &[buf("x", Data::U32(x)), buf("lens", Data::U32(vec![3, 9]))],
        );
        // Segment 0: cdf(0) = 2, cdf(5) = 3, cdf(1023) = 4, of 4: 2046 / 4 = 511, 3069 / 4 = 767,
        // 1023. Segment 1: both samples are 7, cdf(7) = 2 of 2: 1023; the unused two stay 0.
        assert_eq!(
            y[0].data,
            Data::U32(vec![511, 511, 1023, 767, 1023, 1023, 0, 0])
        );
        // Slots of one sample: every sample maps to the top of the range.
        let y = segment_equalize(
            &params(&[("segs", 3), ("cap", 1)]),
            &[
                buf("x", Data::U32(vec![0, 512, 1023])),
                buf("lens", Data::U32(vec![0, 7, 1_000_000])),
            ],
        );
        assert_eq!(y[0].data, Data::U32(vec![1023, 1023, 1023]));
        // Four distinct samples spread evenly: 1023 / 4, 2046 / 4, 3069 / 4, 1023.
        let y = segment_equalize(
            &params(&[("segs", 1), ("cap", 5)]),
            &[
                buf("x", Data::U32(vec![40, 10, 30, 20, 999])),
                buf("lens", Data::U32(vec![3])),
            ],
        );
        assert_eq!(y[0].data, Data::U32(vec![1023, 255, 767, 511, 0]));
    }

    #[test]
    fn exercise_38_standardizes_with_the_padded_variance() {
        let y = f32s(
            &standardize(&params(&[("n", 2)]), &[buf("x", Data::F32(vec![1.0, 3.0]))]),
            0,
        );
        // mean 2, variance 1: (x - 2) / sqrt(1 + 1e-5).
        let s = 1.0 / (1.0f64 + 1e-5).sqrt();
        assert_eq!(y, vec![-s as f32, s as f32]);
        // One value: its own mean, no spread: 0 (the padding keeps it finite).
        let y = f32s(
            &standardize(&params(&[("n", 1)]), &[buf("x", Data::F32(vec![5.0]))]),
            0,
        );
        assert_eq!(y, vec![0.0]);
        // Four values 0, 0, 4, 4: mean 2, variance 4, so +-2 / sqrt(4 + 1e-5).
        let y = f32s(
            &standardize(
                &params(&[("n", 4)]),
                &[buf("x", Data::F32(vec![0.0, 4.0, 0.0, 4.0]))],
            ),
            0,
        );
        let s = (2.0 / (4.0f64 + 1e-5).sqrt()) as f32;
        assert_eq!(y, vec![-s, s, -s, s]);
    }

    #[test]
    fn exercise_68_power_iteration_on_a_chain() {
        let run = |k: Vec<f32>, x0: Vec<f32>, steps: i64| {
            let n = k.len() as i64;
            let out = chain_top_mode(
                &params(&[("n", n), ("steps", steps)]),
                &[buf("k", Data::F32(k)), buf("x0", Data::F32(x0))],
            );
            (f32s(&out, 0), f32s(&out, 1)[0])
        };
        // One mass on a spring of 2: K = [2]. The first step's |y| is 2 * 0.5; then x = -1, |y| = 2.
        assert_eq!(run(vec![2.0], vec![-0.5], 1), (vec![-1.0], 1.0));
        assert_eq!(run(vec![2.0], vec![-0.5], 3), (vec![-1.0], 2.0));
        // Two masses, springs of 1: K = [[2, -1], [-1, 1]]. From (1, 0): y = (2, -1), |y| = sqrt 5.
        let r5 = 5f64.sqrt();
        assert_eq!(
            run(vec![1.0, 1.0], vec![1.0, 0.0], 1),
            (vec![(2.0 / r5) as f32, (-1.0 / r5) as f32], r5 as f32)
        );
        // Many steps: the top eigenvalue (3 + sqrt 5) / 2 and its eigenvector, v1 = (2 - lambda) v0.
        let (mode, lambda) = run(vec![1.0, 1.0], vec![1.0, 0.0], 200);
        let top = (3.0 + r5) / 2.0;
        let v = [1.0, 2.0 - top];
        let norm = (v[0] * v[0] + v[1] * v[1]).sqrt();
        assert!((lambda as f64 - top).abs() < 1e-6, "{lambda}");
        assert!((mode[0] as f64 - v[0] / norm).abs() < 1e-6, "{mode:?}");
        assert!((mode[1] as f64 - v[1] / norm).abs() < 1e-6, "{mode:?}");
        // No steps: x0 as given and lambda 0.
        assert_eq!(
            run(vec![1.0, 1.0], vec![0.25, 0.5], 0),
            (vec![0.25, 0.5], 0.0)
        );
    }
}
