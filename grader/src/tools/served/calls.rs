//! What each timed call is made of: its plan, drawn from the session's secret (the factors of its
//! scaled inputs, the places changed inside the clock, the places read back), and the scaled
//! inputs written a stretch at a time.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{SharedLayout, FRESH_BYTES, PERTURB_STRIDE, SAMPLES};
use crate::exercise::data;
use crate::exercise::reference::Buffer;

/// What a session's timed calls are made of.
#[derive(Debug, Clone)]
pub struct Calls {
    /// The bench's inputs, in the layout's order.
    pub base: Arc<Vec<Buffer>>,
    pub layout: SharedLayout,
    /// Calls per process the judge reads at least (the bench's `repeat`; `judged`).
    pub count: u32,
    /// One call more after those, for the program's timeline and CUPTI's records (`--timeline
    /// CALL FILE`, `--driver CALL ...`): served and waited for like the others, its time kept
    /// apart, its outputs not kept. Where there is one, the judged calls before it are `count` and
    /// up to `EXTRA_JUDGED` more (`judged`).
    pub recorded: bool,
    /// The session's secret: the calls' factors, the places changed and read back.
    pub secret: u64,
}

/// One call as the grader prepares it, before its clock starts.
pub(super) struct CallPlan {
    /// Per input: the factor of its base values (1 for the first call).
    pub(super) scale: Vec<f64>,
    /// Per input: its whole new contents (a small input) or the (element, bytes) changed in it.
    pub(super) changes: Vec<Changes>,
    /// Per output: the elements read back inside the clock (None: all of it).
    pub(super) samples: Vec<Option<Vec<usize>>>,
}

pub(super) enum Changes {
    Whole(Vec<u8>),
    Elements(Vec<(usize, Vec<u8>)>),
}

impl Calls {
    /// The calls the judge reads: `count`, and where a call is recorded after them, up to
    /// `EXTRA_JUDGED` more drawn from the secret, so that a program counting its calls cannot tell
    /// which one is traced and meet the launch or copy goals only there (the traced call stays last:
    /// CUPTI's work at each launch, once subscribed, stays in every later call). Every version of
    /// one session gets the same number.
    pub fn judged(&self) -> u32 {
        let extra = if self.recorded {
            self.rng(0, 300).random_range(0..=EXTRA_JUDGED)
        } else {
            0
        };
        self.count + extra
    }

    /// The process's recorded call (numbered from 1), where there is one: the one after the
    /// judged calls.
    pub fn recorded_call(&self) -> Option<u32> {
        self.recorded.then(|| self.judged() + 1)
    }

    /// Every call the process makes, the recorded one included.
    pub fn total(&self) -> u32 {
        self.judged() + u32::from(self.recorded)
    }

    fn rng(&self, call: u32, what: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(
            self.secret ^ (u64::from(call) << 32) ^ what.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        )
    }

    pub(super) fn plan(&self, call: u32) -> CallPlan {
        let mut rng = self.rng(call, 1);
        let scale = self
            .layout
            .inputs
            .iter()
            .map(|_| {
                if call == 1 {
                    1.0
                } else {
                    rng.random_range(0.55..0.95)
                }
            })
            .collect();
        let changes = self
            .layout
            .inputs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut rng = self.rng(call, 100 + i as u64);
                let dist = s.dist.expect("an input has a distribution");
                if s.bytes() <= FRESH_BYTES {
                    return Changes::Whole(data::to_bytes(&data::draw(
                        s.dtype, dist, s.len, &mut rng,
                    )));
                }
                let per_stretch = (PERTURB_STRIDE / s.dtype.size()).max(1);
                let elements = (0..s.len.div_ceil(per_stretch))
                    .map(|k| {
                        let first = k * per_stretch;
                        let at = rng.random_range(first..(first + per_stretch).min(s.len));
                        (at, data::to_bytes(&data::draw(s.dtype, dist, 1, &mut rng)))
                    })
                    .collect();
                Changes::Elements(elements)
            })
            .collect();
        let samples = self
            .layout
            .outputs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut rng = self.rng(call, 200 + i as u64);
                (s.bytes() > FRESH_BYTES)
                    .then(|| (0..SAMPLES).map(|_| rng.random_range(0..s.len)).collect())
            })
            .collect();
        CallPlan {
            scale,
            changes,
            samples,
        }
    }
}

/// The most judged calls added before a recorded one (`Calls::judged`): a program that guesses
/// which call is traced is right once in `EXTRA_JUDGED + 1`, and a wrong guess runs its other code
/// in a judged call. A call of the exercises clocked by the call costs 0.05-17 ms; the process's
/// start costs more than all of them.
pub const EXTRA_JUDGED: u32 = 2;

// The scaling is arithmetic over whole inputs: it lives in the crate compiled optimised.
pub(super) use cudabugs_compute::codec::put_scaled;
#[cfg(test)]
use cudabugs_compute::codec::STRETCH;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exercise::dtype::DType;
    use crate::exercise::manifest::Dist;
    use crate::exercise::reference::Data;

    #[test]
    fn each_call_sees_its_own_inputs_and_the_same_in_every_version() {
        let layout = SharedLayout::new(
            &[
                (
                    "small".into(),
                    DType::F32,
                    100,
                    Some(Dist::Uniform { lo: 0.0, hi: 1.0 }),
                ),
                (
                    "big".into(),
                    DType::U32,
                    1 << 20,
                    Some(Dist::Integers { lo: 0, hi: 255 }),
                ),
            ],
            &[("out".into(), DType::F32, 1 << 20)],
        );
        let calls = Calls {
            base: Arc::new(Vec::new()),
            layout,
            count: 3,
            recorded: false,
            secret: 42,
        };
        let (a, b) = (calls.plan(2), calls.plan(2));
        let whole = |p: &CallPlan| match &p.changes[0] {
            Changes::Whole(v) => v.clone(),
            _ => panic!("a small input is drawn whole"),
        };
        let elements = |p: &CallPlan| match &p.changes[1] {
            Changes::Elements(v) => v.clone(),
            _ => panic!("a big input gets elements changed"),
        };
        assert_eq!(whole(&a), whole(&b), "the same session, the same call");
        assert_ne!(
            whole(&a),
            whole(&calls.plan(3)),
            "another call, other inputs"
        );
        assert_eq!(
            elements(&a).len(),
            (4 << 20) / PERTURB_STRIDE,
            "one element in every stretch"
        );
        assert!(elements(&a)
            .iter()
            .enumerate()
            .all(|(k, (i, _))| (k * PERTURB_STRIDE / 4..(k + 1) * PERTURB_STRIDE / 4).contains(i)));
        assert_eq!(
            calls.plan(1).scale,
            vec![1.0, 1.0],
            "the first call's base is the bench's"
        );
        assert!(a.scale.iter().all(|f| (0.55..0.95).contains(f)));
        assert_eq!(a.samples[0].as_ref().map(Vec::len), Some(SAMPLES));
        let other = Calls {
            secret: 43,
            ..calls
        };
        assert_ne!(
            whole(&other.plan(2)),
            whole(&a),
            "another session, other inputs"
        );
    }

    fn scaled(base: &Data, dist: Option<Dist>, f: f64) -> Vec<u8> {
        let mut out = Vec::new();
        put_scaled(base, dist, f, &mut |at, bytes| {
            assert_eq!(at, out.len(), "stretches in order, none left out");
            out.extend_from_slice(bytes)
        });
        out
    }

    #[test]
    fn the_first_call_is_the_bench_bit_for_bit_a_stretch_at_a_time() {
        let base = Data::F32((0..STRETCH * 2 + 5).map(|i| i as f32 * 0.1 - 3.0).collect());
        let dist = Some(Dist::Uniform { lo: -3.0, hi: 1e6 });
        assert_eq!(scaled(&base, dist, 1.0), data::to_bytes(&base));
        let half = scaled(&base, dist, 0.5);
        assert_eq!(half.len(), (STRETCH * 2 + 5) * 4);
        let last = f32::from_le_bytes(half[half.len() - 4..].try_into().unwrap());
        assert_eq!(
            last,
            (-3.0 + (((STRETCH * 2 + 4) as f32 * 0.1 - 3.0) as f64 + 3.0) * 0.5) as f32
        );
    }

    #[test]
    fn scaling_keeps_values_in_their_range() {
        let ints = scaled(
            &Data::U32(vec![3, 255]),
            Some(Dist::Integers { lo: 3, hi: 255 }),
            0.5,
        );
        assert_eq!(data::from_bytes(DType::U32, &ints), Data::U32(vec![3, 129]));
        let floats = scaled(
            &Data::F32(vec![10.0]),
            Some(Dist::Uniform {
                lo: -10.0,
                hi: 10.0,
            }),
            0.75,
        );
        assert_eq!(data::from_bytes(DType::F32, &floats), Data::F32(vec![5.0]));
    }
}
