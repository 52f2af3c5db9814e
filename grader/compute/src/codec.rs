//! Seeded inputs and their little-endian bytes, as the harness's files and shared memory hold them
//! (harness/harness.cu documents the layout); and the scaled inputs of the timed calls.

use std::io::{self, Write};

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::dtype::DType;
use crate::reference::Data;

/// A manifest input's distribution.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Dist {
    /// Floats uniform in [lo, hi).
    Uniform { lo: f64, hi: f64 },
    /// Integers uniform in [lo, hi].
    Integers { lo: i64, hi: i64 },
}

/// `len` values of `dtype` from `dist`. ChaCha8 keeps the stream identical across platforms and
/// crate versions, so a seed names the same data everywhere. (One concrete generator: a generic
/// one would be compiled in the caller's crate, unoptimised in the dev profile.)
pub fn draw(dtype: DType, dist: Dist, len: usize, rng: &mut ChaCha8Rng) -> Data {
    match (dtype, dist) {
        (DType::F32, Dist::Uniform { lo, hi }) => Data::F32(
            (0..len)
                .map(|_| rng.random_range(lo as f32..hi as f32))
                .collect(),
        ),
        (DType::F64, Dist::Uniform { lo, hi }) => {
            Data::F64((0..len).map(|_| rng.random_range(lo..hi)).collect())
        }
        (DType::I32, Dist::Integers { lo, hi }) => {
            Data::I32((0..len).map(|_| rng.random_range(lo..=hi) as i32).collect())
        }
        (DType::U32, Dist::Integers { lo, hi }) => {
            Data::U32((0..len).map(|_| rng.random_range(lo..=hi) as u32).collect())
        }
        (dtype, dist) => unreachable!("validated manifest: {dtype:?} with {dist:?}"),
    }
}

/// Elements encoded at a time (256 KiB of f32): no copy of a whole buffer is made. Whole copies
/// (scale, encode, then write) took the grader 0.3 s a call for 128 MiB
/// (`cargo bench -p grader --bench served_calls`).
pub const STRETCH: usize = 1 << 16;

/// The little-endian bytes of `data`.
pub fn to_bytes(data: &Data) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() * data.dtype().size());
    put_scaled(data, None, 1.0, &mut |_, bytes| {
        out.extend_from_slice(bytes)
    });
    out
}

/// `data`'s little-endian bytes written to `w`, a stretch at a time.
pub fn write_data(w: &mut dyn Write, data: &Data) -> io::Result<()> {
    let mut result = Ok(());
    put_scaled(data, None, 1.0, &mut |_, bytes| {
        if result.is_ok() {
            result = w.write_all(bytes);
        }
    });
    result
}

/// `data` read back from little-endian bytes.
pub fn from_bytes(dtype: DType, bytes: &[u8]) -> Data {
    match dtype {
        DType::F32 => Data::F32(
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        ),
        DType::F64 => Data::F64(
            bytes
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        ),
        DType::I32 => Data::I32(
            bytes
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        ),
        DType::U32 => Data::U32(
            bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        ),
    }
}

/// The base values scaled towards the distribution's low end: `lo + (x - lo) * f`, inside the
/// distribution's range for floats and integers alike; handed to `put` a stretch at a time, as
/// (byte offset, little-endian bytes). `f` = 1 gives the values bit for bit.
pub fn put_scaled(base: &Data, dist: Option<Dist>, f: f64, put: &mut dyn FnMut(usize, &[u8])) {
    let lo = match dist {
        Some(Dist::Uniform { lo, .. }) => lo,
        Some(Dist::Integers { lo, .. }) => lo as f64,
        None => 0.0,
    };
    let s = |x: f64| lo + (x - lo) * f;
    let mut buf = Vec::with_capacity(STRETCH * 8);
    // The first call's inputs are the bench's, bit for bit.
    let same = f == 1.0;
    match base {
        Data::F32(v) => by_stretch(v, &mut buf, put, |x: f32| {
            (if same { x } else { s(f64::from(x)) as f32 }).to_le_bytes()
        }),
        Data::F64(v) => by_stretch(v, &mut buf, put, |x: f64| {
            (if same { x } else { s(x) }).to_le_bytes()
        }),
        Data::I32(v) => by_stretch(v, &mut buf, put, |x: i32| {
            (if same {
                x
            } else {
                s(f64::from(x)).floor() as i32
            })
            .to_le_bytes()
        }),
        Data::U32(v) => by_stretch(v, &mut buf, put, |x: u32| {
            (if same {
                x
            } else {
                s(f64::from(x)).floor() as u32
            })
            .to_le_bytes()
        }),
    }
}

/// `values` encoded by `bytes_of` into `buf` a stretch at a time, each stretch handed to `put`.
fn by_stretch<T: Copy, const N: usize>(
    values: &[T],
    buf: &mut Vec<u8>,
    put: &mut dyn FnMut(usize, &[u8]),
    bytes_of: impl Fn(T) -> [u8; N],
) {
    for (k, stretch) in values.chunks(STRETCH).enumerate() {
        buf.resize(stretch.len() * N, 0);
        for (to, &x) in buf.chunks_exact_mut(N).zip(stretch) {
            to.copy_from_slice(&bytes_of(x));
        }
        put(k * STRETCH * N, buf);
    }
}
