//! References of exercises 31-pitch, 34-managed-race, 69-prefetch: pitched 2-D memory and unified memory.
//!
//! 31 reuses `box-blur3` (early.rs): the blur is 16-uninit-shared's, only its memory is pitched, and
//! the pitch never reaches the outputs (the harness's buffers are packed). 34 has its own,
//! `logistic-growth`; 69 has `cooling-watched`, 63-transfers' cooling run in rounds with each rack's
//! sensor logged after every round.

#[allow(unused_imports)]
use super::*;

pub(super) const REFERENCES: &[(&str, ReferenceFn)] = &[
    ("logistic-growth", logistic_growth),
    ("cooling-watched", cooling_watched),
];

pub(super) const SIGNATURES: &[(&str, Signature)] = &[
    (
        "logistic-growth",
        Signature {
            inputs: &[("x", DType::F32, "n")],
            outputs: &[("y", DType::F32, "n"), ("settled", DType::U32, "n")],
        },
    ),
    (
        "cooling-watched",
        Signature {
            inputs: &[("x", DType::F32, "racks * rack")],
            outputs: &[
                ("y", DType::F32, "racks * rack"),
                ("log", DType::F32, "rounds * racks"),
            ],
        },
    ),
];

/// The share of the gap to the habitat's capacity that one time step of `logistic-growth` closes,
/// per unit of population (34-managed-race's RATE). A power of two, so `RATE * p` is exact.
pub const GROWTH_RATE: f32 = 1.0 / 64.0;

/// One time step of logistic growth, `p + RATE * p * (1 - p)`, rounded as the GPU rounds it:
/// `fmaf(RATE * p, 1.0f - p, p)`, a product (exact), a difference (rounded) and a fused
/// multiply-add (rounded once).
fn growth_step(p: f32) -> f32 {
    (GROWTH_RATE * p).mul_add(1.0 - p, p)
}

/// Logistic growth: each population's size (a share of its habitat's capacity) after `steps` time
/// steps, `y`, and the number of those steps that changed it, `settled`. A step is a function of
/// `p` alone, so a step that leaves `p` as it was leaves it so for good and the loop stops there.
/// From any start in [0.001, 2] the size moves monotonically towards 1 and stops within about 1,300
/// steps (at 0.9999981 from below, 1.0000037 from above), so a case of a million steps costs no more
/// than that. `y` is one of those two sizes for every start; `settled` is what tells the starts
/// apart (a start near extinction takes about 1,300 steps, one next to the capacity a few hundred).
fn logistic_growth(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let steps = param(p, "steps");
    let settle = |mut p: f32| {
        let mut changed = 0u32;
        for _ in 0..steps {
            let next = growth_step(p);
            if next.to_bits() == p.to_bits() {
                break;
            }
            p = next;
            changed += 1;
        }
        (p, changed)
    };
    let (y, settled) = inputs[0].data.as_f32().iter().map(|&p| settle(p)).unzip();
    vec![
        Buffer {
            name: "y".into(),
            data: Data::F32(y),
        },
        Buffer {
            name: "settled".into(),
            data: Data::U32(settled),
        },
    ]
}

/// The room's temperature and the share of a body's gap to it that one time step of
/// `cooling-watched` closes (69-prefetch's AMBIENT and RATE, the same as 63-transfers'). Both are
/// exact in f32, and so are 1 - RATE and RATE * AMBIENT.
pub const WATCHED_AMBIENT: f32 = 20.0;
pub const WATCHED_RATE: f32 = 1.0 / 1024.0;

/// `steps` explicit time steps of Newton's cooling, `t += RATE * (AMBIENT - t)`, each the
/// single-precision fused multiply-add `fma(t, 1 - RATE, RATE * AMBIENT)` the GPU does (the same
/// bits as `fmaf`). A step is a function of `t` alone, so a step that leaves `t` as it was leaves it
/// so for good and the loop stops there: a body between 0 and 100 degrees settles within about
/// 11,500 steps.
fn cool_steps(mut t: f32, steps: usize) -> f32 {
    let (a, b) = (1.0 - WATCHED_RATE, WATCHED_RATE * WATCHED_AMBIENT);
    for _ in 0..steps {
        let next = t.mul_add(a, b);
        if next.to_bits() == t.to_bits() {
            break;
        }
        t = next;
    }
    t
}

/// Cooling in rounds, watched: `racks` racks of `rack` bodies (body `k * rack + i` is body `i` of
/// rack `k`), `rounds` rounds of `steps` time steps each. After every round each rack's sensor, the
/// temperature of its first body, is logged: `log[r * racks + k]` is rack `k` after round `r`. `y`
/// is every body after the last round (the same as `rounds * steps` steps in one go).
fn cooling_watched(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (racks, rack) = (param(p, "racks"), param(p, "rack"));
    let (rounds, steps) = (param(p, "rounds"), param(p, "steps"));
    let mut t = inputs[0].data.as_f32().to_vec();
    assert_eq!(t.len(), racks * rack, "x holds racks * rack bodies");
    let mut log = Vec::with_capacity(rounds * racks);
    for _ in 0..rounds {
        for v in t.iter_mut() {
            *v = cool_steps(*v, steps);
        }
        log.extend((0..racks).map(|k| t[k * rack]));
    }
    vec![
        Buffer {
            name: "y".into(),
            data: Data::F32(t),
        },
        Buffer {
            name: "log".into(),
            data: Data::F32(log),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, i64)]) -> Params {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    /// Both outputs of `logistic-growth`: the sizes and the steps that changed them.
    fn grow_settled(x: Vec<f32>, steps: i64) -> (Vec<f32>, Vec<u32>) {
        let input = Buffer {
            name: "x".into(),
            data: Data::F32(x.clone()),
        };
        let out = logistic_growth(
            &params(&[("n", x.len() as i64), ("steps", steps)]),
            &[input],
        );
        assert_eq!(out.len(), 2);
        assert_eq!(
            (out[0].name.as_str(), out[1].name.as_str()),
            ("y", "settled")
        );
        match (&out[0].data, &out[1].data) {
            (Data::F32(y), Data::U32(settled)) => (y.clone(), settled.clone()),
            other => panic!("{other:?}"),
        }
    }

    fn grow(x: Vec<f32>, steps: i64) -> Vec<f32> {
        grow_settled(x, steps).0
    }

    #[test]
    fn no_steps_leave_the_sizes_as_they_came() {
        let x = vec![0.001, 0.5, 1.0, 2.0];
        assert_eq!(grow(x.clone(), 0), x);
    }

    #[test]
    fn one_step_by_hand() {
        // p = 0.5: RATE * p = 1/128, 1 - p = 1/2, so 0.5 + 1/256 = 0.50390625, exact.
        assert_eq!(grow(vec![0.5], 1), vec![0.503_906_25]);
        // p = 2: RATE * p = 1/32, 1 - p = -1, so 2 - 1/32 = 1.96875, exact.
        assert_eq!(grow(vec![2.0], 1), vec![1.968_75]);
        // p = 0.25: 1/256 * 3/4 = 3/1024, 0.25 + 3/1024 = 0.2529296875, exact.
        assert_eq!(grow(vec![0.25], 1), vec![259.0 / 1024.0]);
        // Two steps from 0.5: 0.50390625 * (1/64) * (1 - 0.50390625) added, rounded once in f32.
        let p1 = 0.503_906_25f32;
        let exact = p1 as f64 + (p1 as f64 / 64.0) * (1.0 - p1 as f64);
        assert_eq!(grow(vec![0.5], 2), vec![exact as f32]);
        // Capacity, and zero, are fixed points.
        assert_eq!(grow(vec![1.0, 0.0], 1_000_000), vec![1.0, 0.0]);
    }

    #[test]
    fn the_early_stop_changes_no_bit() {
        let naive = |p: f32, steps: usize| (0..steps).fold(p, |p, _| growth_step(p));
        let starts = [0.001f32, 0.01, 0.3, 0.99, 1.5, 2.0];
        for &p0 in &starts {
            for steps in [1usize, 10, 100, 700, 1300, 3000] {
                assert_eq!(
                    grow(vec![p0], steps as i64),
                    vec![naive(p0, steps)],
                    "{p0} after {steps}"
                );
            }
        }
        // A million steps: the same as 5,000, since every start has settled by then.
        let y = grow(starts.to_vec(), 1_000_000);
        assert_eq!(
            y,
            starts.iter().map(|&p| naive(p, 5000)).collect::<Vec<_>>()
        );
        for v in y {
            assert!((v - 1.0).abs() < 1e-5, "{v} settles next to the capacity");
        }
    }

    #[test]
    fn every_start_settles_within_1300_steps() {
        let mut worst = 0;
        for k in 0..=2000 {
            let mut p = 0.001 + (2.0 - 0.001) * k as f32 / 2000.0;
            let mut taken = 0;
            while growth_step(p).to_bits() != p.to_bits() {
                p = growth_step(p);
                taken += 1;
                assert!(taken < 10_000, "start {k} does not settle");
            }
            worst = worst.max(taken);
        }
        assert!(worst <= 1300, "{worst} steps");
    }

    #[test]
    fn settled_counts_the_steps_that_changed_the_size_and_tells_the_starts_apart() {
        // Every step of the naive loop that moved p, counted the GPU's way (`next != p`).
        let naive = |mut p: f32, steps: usize| {
            let mut last = 0;
            for s in 0..steps {
                let next = growth_step(p);
                if next != p {
                    last = s as u32 + 1;
                }
                p = next;
            }
            last
        };
        let starts = [0.001f32, 0.01, 0.3, 0.99, 1.0, 1.5, 2.0];
        for steps in [0i64, 1, 100, 1_000_000] {
            let (_, settled) = grow_settled(starts.to_vec(), steps);
            let counted: Vec<u32> = starts
                .iter()
                .map(|&p| naive(p, steps.min(5000) as usize))
                .collect();
            assert_eq!(settled, counted, "{steps} steps");
        }
        // Capacity itself never moves; a short run counts every step.
        let (_, settled) = grow_settled(vec![1.0, 0.5], 10);
        assert_eq!(settled, vec![0, 10]);
        // After a million steps the sizes are one of two values, the counts are not: a program that
        // writes 1s without running the kernel cannot pass.
        let x: Vec<f32> = (0..200).map(|k| 0.001 + k as f32 * 0.01).collect();
        let (y, settled) = grow_settled(x, 1_000_000);
        let mut sizes: Vec<u32> = y.iter().map(|v| v.to_bits()).collect();
        sizes.sort();
        sizes.dedup();
        let mut counts = settled.clone();
        counts.sort();
        counts.dedup();
        assert!(sizes.len() <= 3, "{sizes:?}");
        assert!(counts.len() > 100, "{} distinct counts", counts.len());
    }

    #[test]
    fn signature_matches_the_manifest() {
        let (name, sig) = &SIGNATURES[0];
        assert_eq!(*name, "logistic-growth");
        assert_eq!(sig.inputs, &[("x", DType::F32, "n")]);
        assert_eq!(
            sig.outputs,
            &[("y", DType::F32, "n"), ("settled", DType::U32, "n")]
        );
    }

    fn watch(x: Vec<f32>, racks: i64, rack: i64, rounds: i64, steps: i64) -> (Vec<f32>, Vec<f32>) {
        let input = Buffer {
            name: "x".into(),
            data: Data::F32(x),
        };
        let p = params(&[
            ("racks", racks),
            ("rack", rack),
            ("rounds", rounds),
            ("steps", steps),
        ]);
        let out = cooling_watched(&p, &[input]);
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].name.as_str(), out[1].name.as_str()), ("y", "log"));
        match (&out[0].data, &out[1].data) {
            (Data::F32(y), Data::F32(log)) => (y.clone(), log.clone()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn one_cooling_step_by_hand() {
        // 100 - (100 - 20) / 1024 = 100 - 0.078125 = 99.921875, exact in f32.
        assert_eq!(
            watch(vec![100.0], 1, 1, 1, 1),
            (vec![99.921_875], vec![99.921_875])
        );
        // A body at the room's temperature stays there: 20 * 1023/1024 + 20/1024 = 20, exact.
        assert_eq!(watch(vec![20.0], 1, 1, 5, 7), (vec![20.0], vec![20.0; 5]));
        // Two steps from 100: the second is 99.921875 * 1023/1024 + 20/1024, exact in f64 (a 24-bit
        // mantissa times 1023, plus a multiple of 2^-10), rounded once to f32: what fmaf gives.
        let t1 = 99.921_875f64;
        let exact = t1 * 1023.0 / 1024.0 + 20.0 / 1024.0;
        assert_eq!(
            watch(vec![100.0], 1, 1, 2, 1).1,
            vec![99.921_875, exact as f32]
        );
    }

    #[test]
    fn the_log_holds_each_racks_first_body_after_every_round() {
        // Three racks of two bodies, no steps: the sensors are bodies 0, 2 and 4, unchanged.
        let x = vec![10.0, 50.0, 30.0, 70.0, 90.0, 0.0];
        let (y, log) = watch(x.clone(), 3, 2, 2, 0);
        assert_eq!(y, x);
        assert_eq!(log, vec![10.0, 30.0, 90.0, 10.0, 30.0, 90.0]);
        // With steps: round r's row is the first bodies after (r + 1) * steps steps.
        let naive = |t: f32, steps: usize| {
            (0..steps).fold(t, |t, _| {
                t.mul_add(1.0 - WATCHED_RATE, WATCHED_RATE * WATCHED_AMBIENT)
            })
        };
        let (y, log) = watch(x.clone(), 3, 2, 4, 5);
        assert_eq!(y, x.iter().map(|&t| naive(t, 20)).collect::<Vec<_>>());
        for r in 0..4 {
            for k in 0..3 {
                assert_eq!(
                    log[r * 3 + k],
                    naive(x[k * 2], 5 * (r + 1)),
                    "round {r} rack {k}"
                );
            }
        }
        // A body that is not a rack's first one never reaches the log.
        let (_, log) = watch(vec![1.0, 99.0], 1, 2, 3, 1);
        assert!(log.iter().all(|&v| v < 2.0), "{log:?}");
    }

    #[test]
    fn rounds_split_the_steps_without_changing_a_bit() {
        let x: Vec<f32> = (0..64).map(|i| i as f32 * 1.5625).collect();
        let (once, _) = watch(x.clone(), 8, 8, 1, 600);
        let (split, _) = watch(x.clone(), 8, 8, 6, 100);
        assert_eq!(once, split);
        // Long enough to settle: every body stops within a thousandth of a degree of the room (where
        // a step's change, (20 - t) / 1024, rounds away), and the early stop changes no bit against
        // stepping on.
        let (settled, log) = watch(x.clone(), 8, 8, 3, 8000);
        for v in settled.iter().chain(&log[8..]) {
            assert!((v - 20.0).abs() < 1.5e-3, "{v}");
        }
        let naive = |t: f32| {
            (0..24_000).fold(t, |t, _| {
                t.mul_add(1.0 - WATCHED_RATE, WATCHED_RATE * WATCHED_AMBIENT)
            })
        };
        assert_eq!(settled, x.iter().map(|&t| naive(t)).collect::<Vec<_>>());
    }

    #[test]
    fn cooling_watched_signature_matches_the_manifest() {
        let (name, sig) = &SIGNATURES[1];
        assert_eq!(*name, "cooling-watched");
        assert_eq!(sig.inputs, &[("x", DType::F32, "racks * rack")]);
        assert_eq!(
            sig.outputs,
            &[
                ("y", DType::F32, "racks * rack"),
                ("log", DType::F32, "rounds * racks")
            ]
        );
    }
}
