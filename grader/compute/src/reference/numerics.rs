//! References of exercises 39-hash-insert, 40-half-overflow, 66-softmax-fused: a concurrent hash table, half precision, a fused softmax.
//! (66-softmax-fused reuses `softmax-rows` from `early.rs`.)

#[allow(unused_imports)]
use super::*;

pub(super) const REFERENCES: &[(&str, ReferenceFn)] = &[
    ("distinct-tokens", distinct_tokens),
    ("channel-means", channel_means),
];

pub(super) const SIGNATURES: &[(&str, Signature)] = &[
    (
        "distinct-tokens",
        Signature {
            inputs: &[("tokens", DType::U32, "segments * size")],
            outputs: &[("distinct", DType::U32, "segments")],
        },
    ),
    (
        "channel-means",
        Signature {
            inputs: &[("act", DType::F32, "channels * count")],
            outputs: &[("mean", DType::F32, "channels")],
        },
    ),
];

/// The number of distinct token ids in each of `segments` documents of `size` tokens (exact).
fn distinct_tokens(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (segments, size) = (param(p, "segments"), param(p, "size"));
    let tokens = inputs[0].data.as_u32();
    let mut doc: Vec<u32> = Vec::with_capacity(size);
    let counts = (0..segments)
        .map(|s| {
            doc.clear();
            doc.extend_from_slice(&tokens[s * size..(s + 1) * size]);
            doc.sort_unstable();
            doc.dedup();
            doc.len() as u32
        })
        .collect();
    out("distinct", Data::U32(counts))
}

/// The mean of each of `channels` runs of `count` values, from the f32 inputs as given (not
/// rounded to half), summed in f64. The exercise's tolerance accepts the half storage's rounding.
fn channel_means(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (channels, count) = (param(p, "channels"), param(p, "count"));
    let x = inputs[0].data.as_f32();
    let means = (0..channels)
        .map(|c| {
            let sum: f64 = x[c * count..(c + 1) * count]
                .iter()
                .map(|&v| v as f64)
                .sum();
            (sum / count as f64) as f32
        })
        .collect();
    out("mean", Data::F32(means))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(list: &[(&str, i64)]) -> Params {
        list.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn input(name: &str, data: Data) -> Vec<Buffer> {
        vec![Buffer {
            name: name.to_string(),
            data,
        }]
    }

    #[test]
    fn distinct_tokens_counts_each_document_apart() {
        let tokens = vec![1, 2, 2, 3, 5, 5, 5, 5, 7, 0, 7, 49999];
        let got = distinct_tokens(
            &params(&[("segments", 3), ("size", 4)]),
            &input("tokens", Data::U32(tokens)),
        );
        assert_eq!(got[0].name, "distinct");
        assert_eq!(got[0].data, Data::U32(vec![3, 1, 3]));
        // A document of one token has one distinct token.
        let got = distinct_tokens(
            &params(&[("segments", 3), ("size", 1)]),
            &input("tokens", Data::U32(vec![4, 4, 9])),
        );
        assert_eq!(got[0].data, Data::U32(vec![1, 1, 1]));
    }

    #[test]
    fn channel_means_average_each_channel() {
        let got = channel_means(
            &params(&[("channels", 2), ("count", 3)]),
            &input("act", Data::F32(vec![1.0, 2.0, 3.0, 0.5, 0.25, 0.75])),
        );
        assert_eq!(got[0].name, "mean");
        assert_eq!(got[0].data, Data::F32(vec![2.0, 0.5]));
    }

    /// `x` rounded to the nearest IEEE half (binary16), ties to even, as `__float2half` does;
    /// inf from 65520 on.
    fn to_half(x: f32) -> f32 {
        let a = x.abs();
        if a >= 65520.0 {
            return f32::INFINITY.copysign(x);
        }
        // The spacing of halves near `a`: 2^-24 below 2^-14 (subnormals), else 2^(e - 10).
        let e = ((a.to_bits() >> 23) & 0xff) as i32 - 127;
        let q = 2f64.powi(if a < 2f32.powi(-14) { -24 } else { e - 10 });
        ((a as f64 / q).round_ties_even() * q).copysign(x as f64) as f32
    }

    /// The sum of two halves rounded to half, as `__hadd` does. The f32 sum of two halves
    /// rounded again to half is the correctly rounded half sum (24 >= 2 * 11 + 2 bits).
    fn hadd(a: f32, b: f32) -> f32 {
        to_half(a + b)
    }

    #[test]
    fn half_rounding_is_what_the_lesson_says() {
        assert_eq!(to_half(65504.0), 65504.0);
        assert_eq!(to_half(65519.0), 65504.0);
        assert_eq!(to_half(65520.0), f32::INFINITY);
        // Near 1 the halves are 2^-10 apart; a tie goes to the even neighbour.
        assert_eq!(to_half(1.0 + 1.0 / 4096.0), 1.0);
        assert_eq!(to_half(1.0 + 3.0 / 4096.0), 1.0 + 1.0 / 1024.0);
        assert_eq!(
            to_half(1.0 + 2.0 / 4096.0),
            1.0,
            "a tie goes to the even neighbour"
        );
        assert_eq!(to_half(1.0 + 6.0 / 4096.0), 1.0 + 2.0 / 1024.0);
        // Above 2048 the halves are 2 apart: adding anything below 1 changes nothing.
        assert_eq!(hadd(2048.0, to_half(0.999)), 2048.0);
        assert_eq!(hadd(2047.0, 0.5), 2048.0);
        // Relative error of storage at most 2^-11.
        for k in 0..10_000 {
            let x = 1e-4f32 + k as f32 * 0.0999;
            assert!((to_half(x) - x).abs() <= x * 2f32.powi(-11), "{x}");
        }
    }

    /// A channel of `count` values in [0, 1) from a fixed generator.
    fn channel(count: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..count)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 40) as f32 / (1u64 << 24) as f32
            })
            .collect()
    }

    /// The kernel's order of additions (256 threads, each every 256th value, then a tree) with
    /// `thread_add` for a thread's own values and `tree_add` for the tree; the mean.
    fn block_mean(
        x: &[f32],
        thread_add: fn(f32, f32) -> f32,
        tree_add: fn(f32, f32) -> f32,
    ) -> f32 {
        let mut s: Vec<f32> = (0..256)
            .map(|t| {
                x.iter()
                    .skip(t)
                    .step_by(256)
                    .fold(0.0, |acc, &v| thread_add(acc, to_half(v)))
            })
            .collect();
        let mut stride = 128;
        while stride > 0 {
            for t in 0..stride {
                s[t] = tree_add(s[t], s[t + stride]);
            }
            stride /= 2;
        }
        s[0] / x.len() as f32
    }

    fn fadd(a: f32, b: f32) -> f32 {
        a + b
    }

    /// 40-half-overflow's tolerance (atol 1e-6, rtol 1e-3) against the exact mean.
    fn within_tolerance(got: f32, want: f32) -> bool {
        ((got as f64) - (want as f64)).abs() <= 1e-6 + 1e-3 * (want as f64).abs()
    }

    #[test]
    fn the_tolerance_accepts_half_storage_and_rejects_half_sums() {
        for (count, seed) in [
            (1usize, 1u64),
            (300, 2),
            (4096, 3),
            (262_144, 4),
            (1 << 21, 5),
        ] {
            let x = channel(count, seed);
            let want = channel_means(
                &params(&[("channels", 1), ("count", count as i64)]),
                &input("act", Data::F32(x.clone())),
            );
            let Data::F32(want) = &want[0].data else {
                unreachable!()
            };
            let want = want[0];
            // The fix: values stored in half, every sum in float.
            let fix = block_mean(&x, fadd, fadd);
            assert!(
                within_tolerance(fix, want),
                "fix, count {count}: {fix} vs {want}"
            );
            // The bug: every sum in half.
            let bug = block_mean(&x, hadd, hadd);
            // The half-fix: a thread's own sum in half, the tree in float.
            let half_fix = block_mean(&x, hadd, fadd);
            match count {
                1 => assert!(within_tolerance(bug, want), "one value: only its rounding"),
                262_144 => {
                    assert_eq!(bug, f32::INFINITY, "the total passes 65504");
                    assert!(
                        within_tolerance(half_fix, want),
                        "no thread's sum reaches 2048"
                    );
                }
                2_097_152 => {
                    assert_eq!(bug, f32::INFINITY);
                    // Every thread's sum stops at 2048: 256 * 2048 / 2^21 = 0.25.
                    assert_eq!(half_fix, 0.25, "the threads' sums stall at 2048");
                    assert!(!within_tolerance(half_fix, want));
                }
                _ => {}
            }
        }
    }
}
