//! Seeded inputs and the binary files the harness reads (`CBIN`) and writes (`CBOT`).
//! The layout is documented in harness/harness.cu; all integers are little-endian.

use std::io::{self, Read, Write};
use std::path::Path;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::exercise::manifest::{eval_len, BufferSpec, DType};
use crate::exercise::reference::{Buffer, Params};

/// Draw every input of a case from its manifest distribution. ChaCha8 keeps the stream identical
/// across platforms and crate versions, so a seed names the same data everywhere.
pub fn generate(specs: &[BufferSpec], params: &Params, seed: u64) -> Vec<Buffer> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    specs
        .iter()
        .map(|spec| {
            let len = eval_len(spec.len.get_ref(), params).expect("validated manifest");
            Buffer {
                name: spec.name.clone(),
                data: draw(
                    spec.dtype,
                    spec.dist.expect("validated manifest"),
                    len,
                    &mut rng,
                ),
            }
        })
        .collect()
}

pub use cudabugs_compute::codec::{draw, from_bytes, to_bytes};

fn put_name(w: &mut impl Write, name: &str) -> io::Result<()> {
    w.write_all(&(name.len() as u16).to_le_bytes())?;
    w.write_all(name.as_bytes())
}

/// A named buffer as the harness files hold it: name, dtype code, element count, data.
fn put_buffer(w: &mut impl Write, b: &Buffer) -> io::Result<()> {
    put_name(w, &b.name)?;
    w.write_all(&[b.data.dtype().code()])?;
    w.write_all(&(b.data.len() as u64).to_le_bytes())?;
    cudabugs_compute::codec::write_data(w, &b.data)
}

/// Write one case for the harness: parameters, inputs, and the outputs it must produce.
pub fn write_case(
    path: &Path,
    params: &Params,
    inputs: &[Buffer],
    outputs: &[BufferSpec],
) -> io::Result<()> {
    let mut w = io::BufWriter::new(std::fs::File::create(path)?);
    w.write_all(b"CBIN")?;
    w.write_all(&1u32.to_le_bytes())?;
    w.write_all(&(params.len() as u32).to_le_bytes())?;
    for (name, value) in params {
        put_name(&mut w, name)?;
        w.write_all(&value.to_le_bytes())?;
    }
    w.write_all(&(inputs.len() as u32).to_le_bytes())?;
    for b in inputs {
        put_buffer(&mut w, b)?;
    }
    w.write_all(&(outputs.len() as u32).to_le_bytes())?;
    for spec in outputs {
        put_name(&mut w, &spec.name)?;
        w.write_all(&[spec.dtype.code()])?;
        let len = eval_len(spec.len.get_ref(), params).map_err(io::Error::other)?;
        w.write_all(&(len as u64).to_le_bytes())?;
    }
    w.flush()
}

/// Write outputs the way harness.cu does (the grader's copy of a served call's outputs; tests
/// stand in for a program's run with it).
pub fn write_outputs(path: &Path, outputs: &[Buffer]) -> io::Result<()> {
    let bytes: Vec<Vec<u8>> = outputs.iter().map(|b| to_bytes(&b.data)).collect();
    let named: Vec<(&str, DType, &[u8])> = outputs
        .iter()
        .zip(&bytes)
        .map(|(b, raw)| (b.name.as_str(), b.data.dtype(), raw.as_slice()))
        .collect();
    write_raw_outputs(path, &named).map(drop)
}

/// `write_outputs` from each buffer's raw little-endian bytes; where each buffer's bytes start in
/// the file.
pub fn write_raw_outputs(path: &Path, outputs: &[(&str, DType, &[u8])]) -> io::Result<Vec<u64>> {
    let mut w = io::BufWriter::new(std::fs::File::create(path)?);
    w.write_all(b"CBOT")?;
    w.write_all(&1u32.to_le_bytes())?;
    w.write_all(&(outputs.len() as u32).to_le_bytes())?;
    let mut at = 12u64;
    let mut starts = Vec::with_capacity(outputs.len());
    for (name, dtype, bytes) in outputs {
        put_name(&mut w, name)?;
        w.write_all(&[dtype.code()])?;
        w.write_all(&((bytes.len() / dtype.size()) as u64).to_le_bytes())?;
        at += 2 + name.len() as u64 + 1 + 8;
        starts.push(at);
        w.write_all(bytes)?;
        at += bytes.len() as u64;
    }
    w.flush()?;
    Ok(starts)
}

/// The input buffers of a case file (`write_case`'s).
pub fn read_inputs(path: &Path) -> io::Result<Vec<Buffer>> {
    let bytes = std::fs::read(path)?;
    let mut r = bytes.as_slice();
    if &take::<4>(&mut r)? != b"CBIN" || u32::from_le_bytes(take(&mut r)?) != 1 {
        return Err(bad("not a cudabugs input file"));
    }
    for _ in 0..u32::from_le_bytes(take(&mut r)?) {
        let name_len = u16::from_le_bytes(take(&mut r)?) as usize;
        let mut name = vec![0u8; name_len];
        r.read_exact(&mut name)?;
        take::<8>(&mut r)?;
    }
    (0..u32::from_le_bytes(take(&mut r)?))
        .map(|_| read_buffer(&mut r))
        .collect()
}

/// One named buffer (name, dtype code, element count, data) from the front of `r`. No claimed
/// length may pass what is left of the file: an output file is the program's to write, and a claim
/// of 2^50 elements was allocated as it stood (and aborted the grader).
fn read_buffer(r: &mut &[u8]) -> io::Result<Buffer> {
    let name_len = u16::from_le_bytes(take(r)?) as usize;
    let mut name = vec![0u8; name_len];
    r.read_exact(&mut name)?;
    let dtype = DType::from_code(take::<1>(r)?[0]).ok_or_else(|| bad("unknown dtype"))?;
    let len = u64::from_le_bytes(take(r)?);
    let left = r.len();
    let size = len
        .checked_mul(dtype.size() as u64)
        .filter(|&n| n <= left as u64)
        .ok_or_else(|| {
            bad(&format!(
                "a buffer claims {len} elements, more than the {left} bytes left in the file"
            ))
        })? as usize;
    let (data, rest) = r.split_at(size);
    *r = rest;
    Ok(Buffer {
        name: String::from_utf8_lossy(&name).into_owned(),
        data: from_bytes(dtype, data),
    })
}

fn take<const N: usize>(r: &mut impl Read) -> io::Result<[u8; N]> {
    let mut b = [0u8; N];
    r.read_exact(&mut b)?;
    Ok(b)
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

/// Read the outputs the harness wrote (in a run's folder: never through a link).
pub fn read_outputs(path: &Path) -> io::Result<Vec<Buffer>> {
    // Read whole, then each buffer converted straight from the file's bytes (a 256 MiB output: 0.3 s
    // here, as through a reader).
    let bytes = crate::untrusted::read(path)?;
    let mut r = bytes.as_slice();
    if &take::<4>(&mut r)? != b"CBOT" || u32::from_le_bytes(take(&mut r)?) != 1 {
        return Err(bad("not a cudabugs output file"));
    }
    let count = u32::from_le_bytes(take(&mut r)?);
    (0..count).map(|_| read_buffer(&mut r)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exercise::reference::Data;

    fn spec(text: &str) -> Vec<BufferSpec> {
        #[derive(serde::Deserialize)]
        struct W {
            b: Vec<BufferSpec>,
        }
        toml::from_str::<W>(text).unwrap().b
    }

    #[test]
    fn a_written_output_file_says_where_each_buffer_starts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o");
        let (a, b) = (1.5f32.to_le_bytes(), [7u8, 0, 0, 0, 9, 0, 0, 0]);
        let starts =
            write_raw_outputs(&path, &[("a", DType::F32, &a), ("bee", DType::U32, &b)]).unwrap();
        let file = std::fs::read(&path).unwrap();
        let (sa, sb) = (starts[0] as usize, starts[1] as usize);
        assert_eq!((&file[sa..sa + 4], &file[sb..sb + 8]), (&a[..], &b[..]));
        assert_eq!(file.len(), sb + 8);
        assert_eq!(read_outputs(&path).unwrap()[1].data, Data::U32(vec![7, 9]));
    }

    #[test]
    fn the_same_seed_gives_the_same_data_and_respects_the_range() {
        let specs =
            spec("[[b]]\nname='v'\ndtype='u32'\nlen='n'\ndist={kind='integers',lo=3,hi=5}\n");
        let params: Params = [("n".to_string(), 1000)].into();
        let (a, b) = (generate(&specs, &params, 7), generate(&specs, &params, 7));
        assert_eq!(a, b);
        let Data::U32(v) = &a[0].data else { panic!() };
        assert!(v.iter().all(|x| (3..=5).contains(x)) && v.contains(&3) && v.contains(&5));
        assert_ne!(generate(&specs, &params, 8), a);
    }

    #[test]
    fn outputs_round_trip_through_the_harness_format() {
        // Write a CBOT file the way harness.cu does and read it back.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o.bin");
        let mut bytes = b"CBOT".to_vec();
        bytes.extend(1u32.to_le_bytes());
        bytes.extend(1u32.to_le_bytes());
        bytes.extend(1u16.to_le_bytes());
        bytes.push(b'y');
        bytes.push(DType::F32.code());
        bytes.extend(2u64.to_le_bytes());
        bytes.extend(1.5f32.to_le_bytes());
        bytes.extend(f32::NAN.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let out = read_outputs(&path).unwrap();
        let again = dir.path().join("again.bin");
        write_outputs(&again, &out).unwrap();
        assert_eq!(
            std::fs::read(&again).unwrap(),
            bytes,
            "the tests' writer writes what harness.cu does"
        );
        let Data::F32(v) = &out[0].data else { panic!() };
        assert_eq!((out[0].name.as_str(), v[0]), ("y", 1.5));
        assert!(v[1].is_nan());
        std::fs::write(&path, b"CBOTxxxx").unwrap();
        assert!(read_outputs(&path).is_err());
    }
}
