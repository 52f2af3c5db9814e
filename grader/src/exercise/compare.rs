//! Comparing the harness's outputs with the Rust reference: atol/rtol for floats, exact for
//! integers, NaN never equal, the maximum error and the first bad index reported.

use serde::Serialize;

use crate::exercise::manifest::Tolerance;
use crate::exercise::reference::{Buffer, Data};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Mismatch {
    pub buffer: String,
    pub index: usize,
    pub expected: f64,
    pub got: f64,
    pub bad_count: usize,
    pub len: usize,
    pub max_abs_error: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub enum Comparison {
    Equal {
        max_abs_error: f64,
    },
    Mismatch(Mismatch),
    /// A buffer is missing or has another type or length.
    Shape(String),
}

fn close(expected: f64, got: f64, tol: Tolerance, exact: bool) -> bool {
    if exact {
        return expected == got;
    }
    // NaN compares false, so a NaN on either side is never close.
    (got - expected).abs() <= tol.atol + tol.rtol * expected.abs()
}

/// Bit for bit the same and every value finite (a NaN or an infinity is never `close`, even to
/// itself): equal with no error, found without the general loop's per-element dispatch. The judge
/// compares every timed call's outputs, 128 MiB each for some benches.
fn identical(a: &Data, b: &Data) -> bool {
    match (a, b) {
        (Data::F32(x), Data::F32(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(p, q)| p.to_bits() == q.to_bits() && p.is_finite())
        }
        (Data::F64(x), Data::F64(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(p, q)| p.to_bits() == q.to_bits() && p.is_finite())
        }
        (Data::I32(x), Data::I32(y)) => x == y,
        (Data::U32(x), Data::U32(y)) => x == y,
        _ => false,
    }
}

/// One buffer's elements compared: the first that is not close, how many are not, the largest error.
struct Scan {
    first_bad: Option<(usize, f64, f64)>,
    bad_count: usize,
    max_error: f64,
}

/// `scan` of one element type: a loop per type, not a match per element (a 256 MiB output of
/// 60-scan is 64M elements, compared for every timed call).
fn scan<T: Copy>(
    want: &[T],
    have: &[T],
    to_f64: impl Fn(T) -> f64,
    tol: Tolerance,
    exact: bool,
) -> Scan {
    let mut s = Scan {
        first_bad: None,
        bad_count: 0,
        max_error: 0.0,
    };
    for (i, (&e, &g)) in want.iter().zip(have).enumerate() {
        let (e, g) = (to_f64(e), to_f64(g));
        let err = if g.is_nan() || e.is_nan() {
            f64::INFINITY
        } else {
            (g - e).abs()
        };
        s.max_error = s.max_error.max(err);
        if !close(e, g, tol, exact) {
            s.bad_count += 1;
            s.first_bad.get_or_insert((i, e, g));
        }
    }
    s
}

pub fn compare(expected: &[Buffer], got: &[Buffer], tol: Tolerance) -> Comparison {
    let mut max_abs_error = 0f64;
    for want in expected {
        let Some(have) = got.iter().find(|b| b.name == want.name) else {
            return Comparison::Shape(format!("output `{}` was not written back", want.name));
        };
        if have.data.dtype() != want.data.dtype() || have.data.len() != want.data.len() {
            return Comparison::Shape(format!(
                "output `{}`: expected {} x {:?}, got {} x {:?}",
                want.name,
                want.data.len(),
                want.data.dtype(),
                have.data.len(),
                have.data.dtype()
            ));
        }
        if identical(&want.data, &have.data) {
            continue;
        }
        let exact = !want.data.dtype().is_float();
        let Scan {
            first_bad,
            bad_count,
            max_error: buffer_max,
        } = match (&want.data, &have.data) {
            (Data::F32(e), Data::F32(g)) => scan(e, g, |v| v as f64, tol, exact),
            (Data::F64(e), Data::F64(g)) => scan(e, g, |v| v, tol, exact),
            (Data::I32(e), Data::I32(g)) => scan(e, g, |v| v as f64, tol, exact),
            (Data::U32(e), Data::U32(g)) => scan(e, g, |v| v as f64, tol, exact),
            _ => unreachable!("the dtypes were compared above"),
        };
        if let Some((index, expected, got)) = first_bad {
            return Comparison::Mismatch(Mismatch {
                buffer: want.name.clone(),
                index,
                expected,
                got,
                bad_count,
                len: want.data.len(),
                max_abs_error: buffer_max,
            });
        }
        max_abs_error = max_abs_error.max(buffer_max);
    }
    Comparison::Equal { max_abs_error }
}

/// Whether `data` still holds the harness's poison pattern (all 0xFF bytes) at `index`.
pub fn is_poison(data: &Data, index: usize) -> bool {
    match data {
        Data::F32(v) => v[index].to_bits() == u32::MAX,
        Data::F64(v) => v[index].to_bits() == u64::MAX,
        Data::I32(v) => v[index] == -1,
        Data::U32(v) => v[index] == u32::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: Vec<f32>) -> Vec<Buffer> {
        vec![Buffer {
            name: "y".into(),
            data: Data::F32(v),
        }]
    }
    const TOL: Tolerance = Tolerance {
        atol: 1e-6,
        rtol: 1e-5,
    };

    #[test]
    fn within_tolerance_is_equal_and_reports_the_max_error() {
        match compare(&f(vec![1.0, 100.0]), &f(vec![1.0, 100.0005]), TOL) {
            Comparison::Equal { max_abs_error } => {
                assert!(max_abs_error > 4e-4 && max_abs_error < 6e-4)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reports_the_first_bad_index_and_the_count() {
        let Comparison::Mismatch(m) =
            compare(&f(vec![1.0, 2.0, 3.0]), &f(vec![1.0, 2.5, 4.0]), TOL)
        else {
            panic!()
        };
        assert_eq!(
            (m.index, m.expected, m.got, m.bad_count, m.len),
            (1, 2.0, 2.5, 2, 3)
        );
    }

    #[test]
    fn nan_never_passes_even_with_huge_tolerance() {
        let loose = Tolerance {
            atol: 1e30,
            rtol: 1e30,
        };
        assert!(matches!(
            compare(&f(vec![1.0]), &f(vec![f32::NAN]), loose),
            Comparison::Mismatch(_)
        ));
        assert!(is_poison(&Data::F32(vec![f32::from_bits(u32::MAX)]), 0));
    }

    #[test]
    fn identical_outputs_are_equal_but_a_nan_or_infinity_matching_itself_is_not() {
        assert!(matches!(
            compare(&f(vec![1.0, -0.0]), &f(vec![1.0, -0.0]), TOL),
            Comparison::Equal { max_abs_error } if max_abs_error == 0.0
        ));
        for odd in [f32::NAN, f32::INFINITY, f32::from_bits(u32::MAX)] {
            assert!(
                matches!(
                    compare(&f(vec![1.0, odd]), &f(vec![1.0, odd]), TOL),
                    Comparison::Mismatch(ref m) if m.index == 1
                ),
                "{odd} is never close, even to itself"
            );
        }
    }

    #[test]
    fn integers_compare_exactly() {
        let e = vec![Buffer {
            name: "b".into(),
            data: Data::U32(vec![5]),
        }];
        let g = vec![Buffer {
            name: "b".into(),
            data: Data::U32(vec![6]),
        }];
        let loose = Tolerance {
            atol: 10.0,
            rtol: 1.0,
        };
        assert!(matches!(compare(&e, &g, loose), Comparison::Mismatch(_)));
    }

    #[test]
    fn missing_or_mis_sized_outputs_are_shape_errors() {
        assert!(matches!(
            compare(&f(vec![1.0]), &[], TOL),
            Comparison::Shape(_)
        ));
        assert!(matches!(
            compare(&f(vec![1.0]), &f(vec![1.0, 2.0]), TOL),
            Comparison::Shape(_)
        ));
    }
}
