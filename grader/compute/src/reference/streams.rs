//! References of exercises 32-event-stream, 33-pinned-reuse, 67-zero-copy, 70-default-stream: streams, events and copies.

#[allow(unused_imports)]
use super::*;

pub(super) const REFERENCES: &[(&str, ReferenceFn)] = &[
    ("ema-detrend", ema_detrend),
    ("eccentric-anomaly", eccentric_anomaly),
    ("jacobi-sweeps", jacobi_sweeps),
    ("pendulum-period", pendulum_period),
];

pub(super) const SIGNATURES: &[(&str, Signature)] = &[
    (
        "ema-detrend",
        Signature {
            inputs: &[("x", DType::F32, "steps * channels")],
            outputs: &[("y", DType::F32, "steps * channels")],
        },
    ),
    (
        "eccentric-anomaly",
        Signature {
            inputs: &[("m", DType::F32, "n")],
            outputs: &[("anomaly", DType::F32, "n")],
        },
    ),
    (
        "jacobi-sweeps",
        Signature {
            inputs: &[("f", DType::F32, "n")],
            outputs: &[("u", DType::F32, "n")],
        },
    ),
    (
        "pendulum-period",
        Signature {
            inputs: &[("a", DType::F32, "n")],
            outputs: &[("y", DType::F32, "n")],
        },
    ),
];

// Exercise 32

/// The share of the gap to a new sample that the 32-event-stream program's moving average closes in
/// one step (its ALPHA): a power of two, exact in f32.
pub const DETREND_ALPHA: f32 = 1.0 / 64.0;

/// `steps` samples of `channels` channels, sample t of channel c at `t * channels + c`. Each
/// channel's level is its exponential moving average, `level[0] = x[0]` and
/// `level[t] = fma(ALPHA, x[t] - level[t - 1], level[t - 1])` (the subtraction rounded, then one
/// fused multiply-add, as the GPU's `fmaf` does: the same bits), and `y = x - level`.
fn ema_detrend(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (channels, steps) = (param(p, "channels"), param(p, "steps"));
    let x = inputs[0].data.as_f32();
    let mut y = vec![0f32; channels * steps];
    let mut level = vec![0f32; channels];
    for t in 0..steps {
        let row = t * channels;
        for c in 0..channels {
            let v = x[row + c];
            level[c] = if t == 0 {
                v
            } else {
                DETREND_ALPHA.mul_add(v - level[c], level[c])
            };
            y[row + c] = v - level[c];
        }
    }
    out("y", Data::F32(y))
}

// Exercise 33

/// The eccentricity of the 33-pinned-reuse program's orbit (its ECC), as the f32 it uses.
pub const KEPLER_ECCENTRICITY: f32 = 0.99;

/// The root of Kepler's equation `E - e sin E = m`, in f64: Newton's method, kept inside a bracket
/// that always holds the root (`|E - m| <= e`, and the left side grows with E since
/// `1 - e cos E > 0`), bisecting where a Newton step would leave it.
fn kepler_root(m: f64, e: f64) -> f64 {
    let (mut lo, mut hi) = (m - e, m + e);
    let mut x = m;
    for _ in 0..200 {
        let f = x - e * x.sin() - m;
        if f == 0.0 {
            return x;
        }
        if f > 0.0 {
            hi = x;
        } else {
            lo = x;
        }
        let mut next = x - f / (1.0 - e * x.cos());
        if next <= lo || next >= hi {
            next = 0.5 * (lo + hi);
        }
        if next == x {
            return x;
        }
        x = next;
    }
    x
}

/// The eccentric anomaly of each mean anomaly `m` at `KEPLER_ECCENTRICITY`, solved exactly in f64.
/// The GPU iterates `E <- m + e sin E` 2048 times in f32: converged (0.99^2048 is about 1e-9), and
/// within about 3e-5 of the root where it is worst conditioned (E near 0 or 2 pi, where each step
/// shrinks the error by only e cos E, nearly 0.99, and the rounding of each step adds up), well
/// inside the manifest's tolerance.
fn eccentric_anomaly(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let e = KEPLER_ECCENTRICITY as f64;
    out(
        "anomaly",
        Data::F32(
            inputs[0]
                .data
                .as_f32()
                .iter()
                .map(|&m| kepler_root(m as f64, e) as f32)
                .collect(),
        ),
    )
}

// Exercise 67

/// `sweeps` Jacobi sweeps for `2 u[i] - u[i - 1] - u[i + 1] = f[i]` from `u = 0`, the cells past
/// both ends held at 0: `u'[i] = ((f[i] + u[i - 1]) + u[i + 1]) * 0.5` in f32, added in the order
/// the GPU adds them (the same bits).
fn jacobi_sweeps(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let sweeps = param(p, "sweeps");
    let f = inputs[0].data.as_f32();
    let n = f.len();
    let mut u = vec![0f32; n];
    let mut next = vec![0f32; n];
    for _ in 0..sweeps {
        for i in 0..n {
            let left = if i > 0 { u[i - 1] } else { 0.0 };
            let right = if i + 1 < n { u[i + 1] } else { 0.0 };
            next[i] = ((f[i] + left) + right) * 0.5;
        }
        std::mem::swap(&mut u, &mut next);
    }
    out("u", Data::F32(u))
}

// Exercise 70

/// The largest amplitude (radians) the 70-default-stream program computes a period for (its
/// MAX_AMPLITUDE); a larger one gets 0.
pub const PENDULUM_MAX_AMPLITUDE: f32 = 2.8;

/// The arithmetic-geometric mean of `a` and `b` (both positive), in f64.
fn agm(mut a: f64, mut b: f64) -> f64 {
    for _ in 0..64 {
        if (a - b).abs() <= 1e-15 * a {
            break;
        }
        (a, b) = (0.5 * (a + b), (a * b).sqrt());
    }
    0.5 * (a + b)
}

/// A pendulum's period at amplitude `a` over its small-swing period: `(2 / pi) K(sin(a / 2))`, the
/// complete elliptic integral of the first kind, which is `1 / agm(1, cos(a / 2))` (Gauss), in
/// f64; 0 beyond `PENDULUM_MAX_AMPLITUDE`. The GPU's midpoint rule on 64 nodes has converged for
/// every amplitude up to it (its error is below 1e-15 in f64), and its float rounding stays within
/// a few 1e-6.
fn pendulum_period(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    out(
        "y",
        Data::F32(
            inputs[0]
                .data
                .as_f32()
                .iter()
                .map(|&a| {
                    if a <= PENDULUM_MAX_AMPLITUDE {
                        (1.0 / agm(1.0, (0.5 * a as f64).cos())) as f32
                    } else {
                        0.0
                    }
                })
                .collect(),
        ),
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
    fn run(f: ReferenceFn, p: &[(&str, i64)], input: Buffer) -> Vec<f32> {
        f(&params(p), std::slice::from_ref(&input))[0]
            .data
            .as_f32()
            .to_vec()
    }

    #[test]
    fn ema_detrend_follows_each_channel_through_its_samples() {
        // Two channels, three samples, interleaved sample by sample: channel 0 is 64, 128, 0;
        // channel 1 is 1, 1, 1. Channel 0's level: 64, then 64 + (128 - 64) / 64 = 65, then
        // 65 + (0 - 65) / 64 = 63.984375 (exact: 65 * 63 / 64). Channel 1 stays at its level.
        let x = f32s("x", vec![64.0, 1.0, 128.0, 1.0, 0.0, 1.0]);
        let y = run(ema_detrend, &[("channels", 2), ("steps", 3)], x);
        assert_eq!(y, vec![0.0, 0.0, 63.0, 0.0, -63.984375, 0.0]);
        // The first sample of every channel is its own level.
        let x = f32s("x", vec![5.0, -2.0, 7.5]);
        let y = run(ema_detrend, &[("channels", 3), ("steps", 1)], x);
        assert_eq!(y, vec![0.0, 0.0, 0.0]);
    }

    #[test]
    fn ema_detrend_rounds_like_the_gpu() {
        // One channel: 0, then 1. The level closes 1/64 of the gap: 0.015625, so y = 0.984375;
        // then x - level for x = 1/3 in f32, then one fused multiply-add.
        let third = 1.0f32 / 3.0;
        let y = run(
            ema_detrend,
            &[("channels", 1), ("steps", 3)],
            f32s("x", vec![0.0, 1.0, third]),
        );
        let level1 = 0.015625f32;
        let level2 = DETREND_ALPHA.mul_add(third - level1, level1);
        assert_eq!(y, vec![0.0, 1.0 - level1, third - level2]);
    }

    #[test]
    fn kepler_roots_solve_the_equation() {
        // Known values: e = 0.5, m = 1 gives E = 1.4987011335...; m = 0 and m = pi are roots of
        // their own equation for any e.
        assert!((kepler_root(1.0, 0.5) - 1.498_701_133_517_848).abs() < 1e-12);
        assert_eq!(kepler_root(0.0, 0.99), 0.0);
        assert!((kepler_root(std::f64::consts::PI, 0.99) - std::f64::consts::PI).abs() < 1e-12);
        // Every root satisfies its equation, near perihelion too, where the slope 1 - e cos E is
        // 0.01.
        for &m in &[
            1e-6,
            0.01,
            0.5,
            2.0,
            3.0,
            4.5,
            6.0,
            std::f64::consts::TAU - 1e-3,
        ] {
            let e = KEPLER_ECCENTRICITY as f64;
            let root = kepler_root(m, e);
            assert!((root - e * root.sin() - m).abs() < 1e-13, "m = {m}");
        }
        let y = run(eccentric_anomaly, &[("n", 2)], f32s("m", vec![0.0, 1.0]));
        // e = 0.99, m = 1: E = 1.9276356, since 0.99 sin(1.9276356) = 0.99 * 0.9370056 = 0.9276356.
        assert_eq!(y[0], 0.0);
        let e = KEPLER_ECCENTRICITY as f64;
        assert!((y[1] as f64 - e * (y[1] as f64).sin() - 1.0).abs() < 1e-6);
        assert!((y[1] - 1.927_64).abs() < 1e-5, "{}", y[1]);
    }

    #[test]
    fn jacobi_sweeps_by_hand() {
        // Three cells, f = 2, 4, 6. Sweep 1 from 0: f / 2 = 1, 2, 3. Sweep 2:
        // (2 + 0 + 2) / 2 = 2, (4 + 1 + 3) / 2 = 4, (6 + 2 + 0) / 2 = 4.
        let f = f32s("f", vec![2.0, 4.0, 6.0]);
        assert_eq!(
            run(jacobi_sweeps, &[("n", 3), ("sweeps", 1)], f.clone()),
            vec![1.0, 2.0, 3.0]
        );
        assert_eq!(
            run(jacobi_sweeps, &[("n", 3), ("sweeps", 2)], f),
            vec![2.0, 4.0, 4.0]
        );
        // One cell: both neighbours are the held ends, so every sweep gives f / 2.
        let one = f32s("f", vec![3.0]);
        assert_eq!(
            run(jacobi_sweeps, &[("n", 1), ("sweeps", 16)], one),
            vec![1.5]
        );
    }

    #[test]
    fn pendulum_periods_match_the_known_values() {
        // Small swings keep the small-swing period; 90 degrees takes 1.18034060 times as long
        // (K(sin 45 degrees) = 1.85407468), 2.8 rad about 2.02080; beyond 2.8 rad there is no answer.
        let a = f32s("a", vec![0.0, std::f32::consts::FRAC_PI_2, 2.8, 2.81, 3.0]);
        let y = run(pendulum_period, &[("n", 5)], a);
        assert_eq!(y[0], 1.0);
        assert!((y[1] - 1.180_340_6).abs() < 1e-6, "{}", y[1]);
        assert!((y[2] - 2.020_804).abs() < 1e-5, "{}", y[2]);
        assert_eq!((y[3], y[4]), (0.0, 0.0));
        // Gauss's AGM against the midpoint rule the GPU uses, on 64 nodes, in f64.
        for &a in &[0.3f64, 1.0, 2.0, 2.8] {
            let k = (0.5 * a).sin();
            let step = std::f64::consts::FRAC_PI_2 / 64.0;
            let mean = (0..64)
                .map(|j| {
                    let s = ((j as f64 + 0.5) * step).sin();
                    1.0 / (1.0 - k * k * s * s).sqrt()
                })
                .sum::<f64>()
                / 64.0;
            assert!(
                (mean - 1.0 / agm(1.0, (0.5 * a).cos())).abs() < 1e-12,
                "a = {a}"
            );
        }
    }
}
