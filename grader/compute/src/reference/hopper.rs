//! References of exercises 43-wgmma-kstep, 44-tensor-map, 45-cluster-dims: Hopper's wgmma, TMA tensor maps and clusters.
//!
//! 44-tensor-map reuses `matmul` and 45-cluster-dims reuses `histogram-mod` (early.rs); only the
//! f16-input product of 43 needs its own.

#[allow(unused_imports)]
use super::*;

pub(super) const REFERENCES: &[(&str, ReferenceFn)] = &[("matmul-f16", matmul_f16)];

pub(super) const SIGNATURES: &[(&str, Signature)] = &[(
    "matmul-f16",
    Signature {
        inputs: &[("a", DType::F32, "m * k"), ("b", DType::F32, "k * n")],
        outputs: &[("c", DType::F32, "m * n")],
    },
)];

/// `x` rounded to the nearest IEEE half-precision value, ties to even, returned as the f32 that
/// holds it exactly: what the GPU's `__float2half_rn` (cvt.rn.f16.f32) gives. Half subnormals
/// (below 2^-14) keep their 2^-24 quantum; magnitudes from 65520 up (halfway past the largest half,
/// 65504) become infinities; NaN stays NaN.
fn round_to_f16(x: f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    let a = x.abs();
    if a >= 65520.0 {
        return f32::INFINITY.copysign(x);
    }
    // The spacing of halves around `a`: 2^-24 below 2^-14 (subnormal), else 2^(e - 10) for a in
    // [2^e, 2^(e+1)). Scaling by a power of two is exact, so the rounding happens once, in
    // round_ties_even.
    let quantum = if a < f32::powi(2.0, -14) {
        f32::powi(2.0, -24)
    } else {
        let e = ((a.to_bits() >> 23) & 0xff) as i32 - 127;
        f32::powi(2.0, e - 10)
    };
    ((a / quantum).round_ties_even() * quantum).copysign(x)
}

/// `c` (m x n) = `a` (m x k) times `b` (k x n), row-major, with every input first rounded to f16 as
/// the 43-wgmma-kstep kernel stages them. The products of two halves are exact in f64 (and in f32);
/// they are summed in f64.
fn matmul_f16(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (m, n, k) = (param(p, "m"), param(p, "n"), param(p, "k"));
    let a: Vec<f64> = inputs[0]
        .data
        .as_f32()
        .iter()
        .map(|&v| round_to_f16(v) as f64)
        .collect();
    let b: Vec<f64> = inputs[1]
        .data
        .as_f32()
        .iter()
        .map(|&v| round_to_f16(v) as f64)
        .collect();
    let mut c = vec![0f64; m * n];
    for r in 0..m {
        let row = &mut c[r * n..(r + 1) * n];
        for i in 0..k {
            let av = a[r * k + i];
            for (cv, &bv) in row.iter_mut().zip(&b[i * n..(i + 1) * n]) {
                *cv += av * bv;
            }
        }
    }
    out("c", Data::F32(c.into_iter().map(|v| v as f32).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, i64)]) -> Params {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn f32s(name: &str, v: Vec<f32>) -> Buffer {
        Buffer {
            name: name.to_string(),
            data: Data::F32(v),
        }
    }

    const TWO_M10: f32 = 1.0 / 1024.0; // the spacing of halves in [1, 2)

    #[test]
    fn halves_are_kept_and_ties_go_to_even() {
        for v in [
            0.0f32,
            -0.0,
            1.0,
            -2.5,
            0.5,
            65504.0,
            1.0 + TWO_M10,
            3.0 * 1024.0,
        ] {
            assert_eq!(round_to_f16(v).to_bits(), v.to_bits(), "{v} is a half");
        }
        // 1 + 2^-11 lies halfway between 1 (even mantissa) and 1 + 2^-10 (odd): down to 1.
        assert_eq!(round_to_f16(1.0 + TWO_M10 / 2.0), 1.0);
        // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even): up.
        assert_eq!(round_to_f16(1.0 + 3.0 * TWO_M10 / 2.0), 1.0 + 2.0 * TWO_M10);
        // Just past the halfway point rounds up, just before it down.
        assert_eq!(
            round_to_f16(1.0 + TWO_M10 / 2.0 + f32::EPSILON),
            1.0 + TWO_M10
        );
        assert_eq!(round_to_f16(1.0 + TWO_M10 / 2.0 - f32::EPSILON), 1.0);
        // The sign is kept, and rounding is symmetric.
        assert_eq!(
            round_to_f16(-(1.0 + 3.0 * TWO_M10 / 2.0)),
            -(1.0 + 2.0 * TWO_M10)
        );
    }

    #[test]
    fn familiar_values_round_to_their_known_halves() {
        // 0.1 is 0x2E66 in half precision: 1638 / 16384.
        assert_eq!(round_to_f16(0.1), 1638.0 / 16384.0);
        assert_eq!(round_to_f16(-0.1), -1638.0 / 16384.0);
        // 1/3 is 0x3555: 1365 / 4096.
        assert_eq!(round_to_f16(1.0 / 3.0), 1365.0 / 4096.0);
        // pi is 0x4248: 3.140625.
        assert_eq!(round_to_f16(std::f32::consts::PI), 3.140625);
    }

    #[test]
    fn the_ends_of_the_half_range() {
        assert_eq!(round_to_f16(65519.0), 65504.0);
        assert_eq!(round_to_f16(65520.0), f32::INFINITY);
        assert_eq!(round_to_f16(-70000.0), f32::NEG_INFINITY);
        assert!(round_to_f16(f32::NAN).is_nan());
        // Subnormal halves: multiples of 2^-24, ties to even multiples.
        let q = f32::powi(2.0, -24);
        assert_eq!(round_to_f16(q), q);
        assert_eq!(round_to_f16(0.5 * q), 0.0);
        assert_eq!(round_to_f16(1.5 * q), 2.0 * q);
        assert_eq!(round_to_f16(2.5 * q), 2.0 * q);
        assert_eq!(round_to_f16(2.6 * q), 3.0 * q);
        // The smallest normal half, and the largest subnormal below it.
        let min_normal = f32::powi(2.0, -14);
        assert_eq!(round_to_f16(min_normal), min_normal);
        assert_eq!(round_to_f16(min_normal - q), min_normal - q);
        assert_eq!(round_to_f16(1e-30), 0.0);
    }

    #[test]
    fn a_product_of_rounded_inputs() {
        // 2 x 3 times 3 x 2, all halves already: the plain product.
        let a = f32s("a", vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let b = f32s("b", vec![7.0, 8.0, 9.0, 10.0, 11.0, 12.0]);
        let c = matmul_f16(&params(&[("m", 2), ("n", 2), ("k", 3)]), &[a, b]);
        assert_eq!(c[0].name, "c");
        assert_eq!(c[0].data, Data::F32(vec![58.0, 64.0, 139.0, 154.0]));
        // 0.1 * 0.1 with the inputs rounded to half first: (1638 / 16384)^2, not 0.01.
        let c = matmul_f16(
            &params(&[("m", 1), ("n", 1), ("k", 1)]),
            &[f32s("a", vec![0.1]), f32s("b", vec![0.1])],
        );
        let h = 1638.0f64 / 16384.0;
        assert_eq!(c[0].data, Data::F32(vec![(h * h) as f32]));
        assert_ne!(c[0].data, Data::F32(vec![0.1f32 * 0.1f32]));
        // 1 + 2^-11 rounds to 1 in each input: 1 x 2 times 2 x 1 gives exactly 2.
        let c = matmul_f16(
            &params(&[("m", 1), ("n", 1), ("k", 2)]),
            &[
                f32s("a", vec![1.0 + TWO_M10 / 2.0, 1.0]),
                f32s("b", vec![1.0, 1.0 + TWO_M10 / 2.0]),
            ],
        );
        assert_eq!(c[0].data, Data::F32(vec![2.0]));
    }

    #[test]
    fn an_empty_inner_dimension_gives_zeros() {
        let c = matmul_f16(
            &params(&[("m", 2), ("n", 3), ("k", 0)]),
            &[f32s("a", vec![]), f32s("b", vec![])],
        );
        assert_eq!(c[0].data, Data::F32(vec![0.0; 6]));
    }
}
