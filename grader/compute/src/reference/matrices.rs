//! References of exercises 41-wmma-layout, 64-register-blocking, 65-tensor-cores: matrix products on CUDA cores and tensor cores.
//!
//! 64 and 65 reuse `matmul` (early.rs): their products are exact fp32 work (64) or are judged with a
//! tolerance that admits the TF32 rounding of the inputs (65, see its manifest and the test below).
//! 41 rounds its inputs to half precision on the GPU before the tensor cores multiply them, so its
//! reference rounds them the same way (`matmul-f16-inputs`).

#[allow(unused_imports)]
use super::*;

pub(super) const REFERENCES: &[(&str, ReferenceFn)] = &[("matmul-f16-inputs", matmul_f16_inputs)];

pub(super) const SIGNATURES: &[(&str, Signature)] = &[(
    "matmul-f16-inputs",
    Signature {
        inputs: &[("a", DType::F32, "m * k"), ("b", DType::F32, "k * n")],
        outputs: &[("c", DType::F32, "m * n")],
    },
)];

/// The half-precision (IEEE binary16) bits nearest to `x`, ties to even: what CUDA's
/// `__float2half_rn` gives. Overflow goes to infinity, values below half of the smallest subnormal
/// (2^-25) to zero, NaN stays NaN.
pub fn f32_to_f16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    if exp == 0 {
        // Zero or an f32 subnormal (below 2^-126): far below half precision's smallest subnormal.
        return sign;
    }
    // x = sig * 2^(e - 23), sig with 24 significant bits. Normal halves keep 11 of them (drop 13);
    // subnormals (below 2^-14) keep fewer.
    let e = exp - 127;
    let sig = (1u32 << 23) | man;
    let shift = if e >= -14 { 13 } else { 13 + (-14 - e) as u32 };
    if shift > 25 {
        return sign;
    }
    let (q, rem, halfway) = (sig >> shift, sig & ((1 << shift) - 1), 1u32 << (shift - 1));
    let q = if rem > halfway || (rem == halfway && q & 1 == 1) {
        q + 1
    } else {
        q
    };
    // q carries the implicit bit (2^10) for normals; adding it to the exponent field lets a
    // rounding carry (q = 2^11) step the exponent up, and a subnormal that rounds up to 2^10
    // become the smallest normal.
    let magnitude = if e >= -14 {
        (((e + 14) as u32) << 10) + q
    } else {
        q
    };
    if magnitude >= 0x7c00 {
        sign | 0x7c00
    } else {
        sign | magnitude as u16
    }
}

/// The value of half-precision bits, widened to f32 (exact).
pub fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let e = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as f32;
    match e {
        0 => sign * m * 2f32.powi(-24),
        31 if m == 0.0 => sign * f32::INFINITY,
        31 => f32::NAN,
        _ => sign * (1024.0 + m) * 2f32.powi(e - 25),
    }
}

/// `x` rounded to the nearest half-precision value (ties to even), as an f32.
pub fn round_to_f16(x: f32) -> f32 {
    f16_bits_to_f32(f32_to_f16_bits(x))
}

/// `c` (m x n) = `a` (m x k) times `b` (k x n), row-major, with every input first rounded to half
/// precision as the exercise's conversion kernel does (`__float2half_rn`). The products of two halves
/// are exact in f32 and the GPU accumulates them in f32; here they are summed in f64, so the only
/// difference left is the GPU's f32 accumulation.
fn matmul_f16_inputs(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (m, n, k) = (param(p, "m"), param(p, "n"), param(p, "k"));
    let half = |v: &[f32]| -> Vec<f64> { v.iter().map(|&x| round_to_f16(x) as f64).collect() };
    let (a, b) = (half(inputs[0].data.as_f32()), half(inputs[1].data.as_f32()));
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
            name: name.into(),
            data: Data::F32(v),
        }
    }
    fn c_of(out: &[Buffer]) -> Vec<f32> {
        match &out[0].data {
            Data::F32(v) => v.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rounding_to_half_is_to_nearest_ties_to_even() {
        let p = |e: i32| 2f32.powi(e);
        // Exact values stay.
        for x in [0.0, 1.0, -2.0, 0.5, 65504.0, p(-14), p(-24), 1.0 + p(-10)] {
            assert_eq!(round_to_f16(x), x, "{x}");
        }
        assert_eq!(f32_to_f16_bits(1.0), 0x3c00);
        assert_eq!(f32_to_f16_bits(-2.0), 0xc000);
        assert_eq!(f32_to_f16_bits(65504.0), 0x7bff);
        // Halfway between 1 and 1 + 2^-10: to the even one, 1.
        assert_eq!(round_to_f16(1.0 + p(-11)), 1.0);
        // Halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even): up.
        assert_eq!(round_to_f16(1.0 + 3.0 * p(-11)), 1.0 + p(-9));
        // Just past halfway: up.
        assert_eq!(round_to_f16(1.0 + p(-11) + p(-20)), 1.0 + p(-10));
        // Just below halfway: down.
        assert_eq!(round_to_f16(1.0 + p(-11) - p(-20)), 1.0);
        // 0.1 is 0x2e66 in half precision (0.0999755859375).
        assert_eq!(f32_to_f16_bits(0.1), 0x2e66);
        assert_eq!(round_to_f16(0.1), 1638.0 / 16384.0);
        assert_eq!(round_to_f16(-0.1), -1638.0 / 16384.0);
        // A carry out of the mantissa steps the exponent: 2 - 2^-12 rounds to 2.
        assert_eq!(round_to_f16(2.0 - p(-12)), 2.0);
        // Overflow: 65519 still rounds to the largest half, 65520 (the halfway point) to infinity.
        assert_eq!(round_to_f16(65519.0), 65504.0);
        assert_eq!(round_to_f16(65520.0), f32::INFINITY);
        assert_eq!(round_to_f16(-1e6), f32::NEG_INFINITY);
        // Subnormals: steps of 2^-24; 2^-25 is the tie between 0 and 2^-24, to even: 0.
        assert_eq!(round_to_f16(3.0 * p(-24)), 3.0 * p(-24));
        assert_eq!(round_to_f16(p(-25)), 0.0);
        assert_eq!(round_to_f16(1.5 * p(-25)), p(-24));
        assert_eq!(round_to_f16(2.5 * p(-24)), 2.0 * p(-24));
        assert_eq!(round_to_f16(3.5 * p(-24)), 4.0 * p(-24));
        assert_eq!(round_to_f16(p(-30)), 0.0);
        // The largest subnormal rounds up into the smallest normal.
        assert_eq!(round_to_f16(p(-14) - p(-26)), p(-14));
        assert_eq!(f32_to_f16_bits(p(-14) - p(-26)), 0x0400);
        assert!(round_to_f16(f32::NAN).is_nan());
        assert_eq!(round_to_f16(f32::INFINITY), f32::INFINITY);
        // Every half value survives the round trip.
        for h in 0..0x7c00u16 {
            let x = f16_bits_to_f32(h);
            assert_eq!(f32_to_f16_bits(x), h, "{h:#x}");
            assert_eq!(f32_to_f16_bits(-x), h | 0x8000, "{h:#x}");
        }
    }

    #[test]
    fn the_product_rounds_its_inputs_to_half_first() {
        // 1 x 1 x 1: 1 + 2^-11 + 2^-12 rounds to 1 + 2^-10, times 3.
        let c = matmul_f16_inputs(
            &params(&[("m", 1), ("n", 1), ("k", 1)]),
            &[
                f32s("a", vec![1.0 + 2f32.powi(-11) + 2f32.powi(-12)]),
                f32s("b", vec![3.0]),
            ],
        );
        assert_eq!(c_of(&c), vec![3.0 * (1.0 + 2f32.powi(-10))]);
        // 2 x 3 times 3 x 2, small integers (exact in half): the plain product.
        let a = vec![1., 2., 3., 4., 5., 6.];
        let b = vec![7., 8., 9., 10., 11., 12.];
        let c = matmul_f16_inputs(
            &params(&[("m", 2), ("n", 2), ("k", 3)]),
            &[f32s("a", a), f32s("b", b)],
        );
        assert_eq!(c_of(&c), vec![58., 64., 139., 154.]);
        // 0.1 * 0.1 uses the half values: 0.0999755859375^2, not 0.01.
        let c = matmul_f16_inputs(
            &params(&[("m", 1), ("n", 1), ("k", 1)]),
            &[f32s("a", vec![0.1]), f32s("b", vec![0.1])],
        );
        assert_eq!(
            c_of(&c),
            vec![(0.099_975_585_937_5f64 * 0.099_975_585_937_5) as f32]
        );
    }

    /// A small deterministic generator (xorshift64*), for values uniform in [-1, 1) as the
    /// manifests' inputs are.
    struct Rng(u64);
    impl Rng {
        fn uniform(&mut self) -> f32 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            let u = (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / (1u64 << 24) as f32;
            2.0 * u - 1.0
        }
    }

    /// `x` rounded to TF32 (10 mantissa bits) to nearest, ties away from zero: `cvt.rna.tf32.f32`,
    /// what `wmma::__float_to_tf32` does.
    fn round_to_tf32(x: f32) -> f32 {
        f32::from_bits((x.to_bits() + 0x1000) & !0x1fff)
    }

    #[test]
    fn tf32_rounding_is_to_nearest_ties_away() {
        let p = |e: i32| 2f32.powi(e);
        assert_eq!(round_to_tf32(1.0 + p(-11)), 1.0 + p(-10));
        assert_eq!(round_to_tf32(1.0 + p(-11) - p(-23)), 1.0);
        assert_eq!(round_to_tf32(-(1.0 + p(-11))), -(1.0 + p(-10)));
        assert_eq!(round_to_tf32(0.75), 0.75);
    }

    /// 41's tolerance (atol 1e-2, rtol 1e-3): with the inputs rounded to half as the reference does,
    /// what is left is the f32 accumulation of exact products. Sequential f32 sums of 1024 products
    /// (the bench's k), even with every addition truncated toward zero (the worst a tensor core's
    /// adder does), stay far inside it. The bug's error is of the order of the values themselves:
    /// with a block of B transposed, element (i, j) meets other values of B in 15 of every 16 terms
    /// (the term on the block's diagonal is the same), and all but a few elements in a thousand
    /// land outside the tolerance.
    #[test]
    fn exercise_41_tolerance_tells_accumulation_from_the_bug() {
        let mut rng = Rng(0x41);
        let k = 1024;
        let samples = 2000;
        let (mut worst_rounding, mut caught) = (0f64, 0);
        for s in 0..samples {
            let a: Vec<f32> = (0..k).map(|_| round_to_f16(rng.uniform())).collect();
            let b: Vec<f32> = (0..k).map(|_| round_to_f16(rng.uniform())).collect();
            let exact: f64 = a.iter().zip(&b).map(|(&x, &y)| x as f64 * y as f64).sum();
            // Truncating every f32 addition: round the f64 sum of two f32s toward zero.
            let truncated = a.iter().zip(&b).fold(0f32, |acc, (&x, &y)| {
                let s = acc as f64 + (x * y) as f64;
                let r = s as f32;
                if (r as f64).abs() > s.abs() {
                    f32::from_bits(r.to_bits() - 1)
                } else {
                    r
                }
            });
            let err = (truncated as f64 - exact).abs();
            worst_rounding = worst_rounding.max(err / (1e-2 + 1e-3 * exact.abs()));
            // What the bug computes for this element: the same value of B on the block's diagonal
            // (term t with t % 16 == the column's place in its block), other values elsewhere.
            let diagonal = s % 16;
            let wrong: f64 = a
                .iter()
                .zip(&b)
                .enumerate()
                .map(|(t, (&x, &y))| {
                    let other = round_to_f16(rng.uniform());
                    x as f64 * if t % 16 == diagonal { y } else { other } as f64
                })
                .sum();
            if (wrong - exact).abs() > 1e-2 + 1e-3 * exact.abs() {
                caught += 1;
            }
        }
        assert!(
            worst_rounding < 0.25,
            "rounding uses {worst_rounding} of the tolerance"
        );
        assert!(
            caught * 100 >= samples * 99,
            "the bug shows in {caught} of {samples}"
        );
    }

    /// 65's tolerance (atol 0.1, rtol 0): rounding the inputs to TF32 (or to half) perturbs each
    /// product by a relative 2^-11 at most per input, at random signs, so a sum of k = 4096 products
    /// of values in [-1, 1) moves by about sqrt(k) * 0.33 * 2.8e-4 = 6e-3 (one standard deviation).
    /// Over the bench's 16.7 million outputs the largest is near 5.5 of those, about 0.035: a
    /// quarter of 0.1 after margin. Here 2000 sums of 4096 products of uniform values must stay
    /// under 0.05.
    #[test]
    fn exercise_65_tolerance_admits_tf32_and_half_inputs() {
        let mut rng = Rng(0x65);
        let k = 4096;
        let (mut worst_tf32, mut worst_half, mut sq) = (0f64, 0f64, 0f64);
        let samples = 2000;
        for _ in 0..samples {
            let a: Vec<f32> = (0..k).map(|_| rng.uniform()).collect();
            let b: Vec<f32> = (0..k).map(|_| rng.uniform()).collect();
            let exact: f64 = a.iter().zip(&b).map(|(&x, &y)| x as f64 * y as f64).sum();
            let tf32: f64 = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| round_to_tf32(x) as f64 * round_to_tf32(y) as f64)
                .sum();
            let half: f64 = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| round_to_f16(x) as f64 * round_to_f16(y) as f64)
                .sum();
            worst_tf32 = worst_tf32.max((tf32 - exact).abs());
            worst_half = worst_half.max((half - exact).abs());
            sq += (tf32 - exact).powi(2);
        }
        let sigma = (sq / samples as f64).sqrt();
        assert!(sigma < 0.01, "one standard deviation is {sigma}");
        assert!(
            worst_tf32 < 0.05 && worst_half < 0.05,
            "{worst_tf32} {worst_half}"
        );
    }
}
