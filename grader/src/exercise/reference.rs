//! The expected answers, computed in Rust from the same inputs the harness gets. Never taken from a
//! solution file: a solution is checked against these like any learner's file.

use std::collections::BTreeMap;

use crate::exercise::dtype::DType;

pub type Params = BTreeMap<String, i64>;

/// A typed host buffer: an input the grader generated or an output the harness wrote back.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    U32(Vec<u32>),
}

impl Data {
    pub fn dtype(&self) -> DType {
        match self {
            Data::F32(_) => DType::F32,
            Data::F64(_) => DType::F64,
            Data::I32(_) => DType::I32,
            Data::U32(_) => DType::U32,
        }
    }
    pub fn len(&self) -> usize {
        match self {
            Data::F32(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::I32(v) => v.len(),
            Data::U32(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Element `i` widened to f64 (exact for every dtype here).
    pub fn get_f64(&self, i: usize) -> f64 {
        match self {
            Data::F32(v) => v[i] as f64,
            Data::F64(v) => v[i],
            Data::I32(v) => v[i] as f64,
            Data::U32(v) => v[i] as f64,
        }
    }
    fn as_f32(&self) -> &[f32] {
        match self {
            Data::F32(v) => v,
            other => panic!("reference expected f32, got {:?}", other.dtype()),
        }
    }
    fn as_u32(&self) -> &[u32] {
        match self {
            Data::U32(v) => v,
            other => panic!("reference expected u32, got {:?}", other.dtype()),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Buffer {
    pub name: String,
    pub data: Data,
}

/// Inputs in manifest order in, outputs in manifest order out.
pub type ReferenceFn = fn(&Params, &[Buffer]) -> Vec<Buffer>;

const REFERENCES: &[(&str, ReferenceFn)] = &[
    ("transpose", transpose),
    ("scale-bias-relu", scale_bias_relu),
    ("sum", sum),
    ("smooth3", smooth3),
    ("histogram256", histogram256),
];

/// What a reference reads and writes: buffers by name, dtype and length expression. A manifest that
/// names the reference must declare exactly these, so that every case it accepts can be computed.
pub struct Signature {
    pub inputs: &'static [(&'static str, DType, &'static str)],
    pub outputs: &'static [(&'static str, DType, &'static str)],
}

const SIGNATURES: &[(&str, Signature)] = &[
    ("transpose", Signature { inputs: &[("in", DType::F32, "rows * cols")], outputs: &[("out", DType::F32, "rows * cols")] }),
    (
        "scale-bias-relu",
        Signature {
            inputs: &[("x", DType::F32, "batch * channels * hw"), ("scale", DType::F32, "channels"), ("bias", DType::F32, "channels")],
            outputs: &[("y", DType::F32, "batch * channels * hw")],
        },
    ),
    ("sum", Signature { inputs: &[("x", DType::F32, "n")], outputs: &[("total", DType::F32, "1")] }),
    ("smooth3", Signature { inputs: &[("x", DType::F32, "n")], outputs: &[("y", DType::F32, "n")] }),
    ("histogram256", Signature { inputs: &[("values", DType::U32, "n")], outputs: &[("bins", DType::U32, "256")] }),
];

pub fn signature(name: &str) -> Option<&'static Signature> {
    SIGNATURES.iter().find(|(n, _)| *n == name).map(|(_, s)| s)
}

pub fn lookup(name: &str) -> Option<ReferenceFn> {
    REFERENCES.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

pub fn names() -> Vec<&'static str> {
    REFERENCES.iter().map(|(n, _)| *n).collect()
}

fn param(p: &Params, name: &str) -> usize {
    usize::try_from(p[name]).expect("manifest validation keeps parameters non-negative")
}

fn out(name: &str, data: Data) -> Vec<Buffer> {
    vec![Buffer { name: name.to_string(), data }]
}

/// `out` (cols x rows) = transpose of `in` (rows x cols), both row-major.
fn transpose(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (rows, cols) = (param(p, "rows"), param(p, "cols"));
    let a = inputs[0].data.as_f32();
    let mut t = vec![0f32; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = a[r * cols + c];
        }
    }
    out("out", Data::F32(t))
}

/// `y[i] = max(0, x[i] * scale[c] + bias[c])` with `c = (i / hw) % channels` (NCHW layout).
fn scale_bias_relu(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let (channels, hw) = (param(p, "channels"), param(p, "hw"));
    let (x, scale, bias) = (inputs[0].data.as_f32(), inputs[1].data.as_f32(), inputs[2].data.as_f32());
    let y = x
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let c = (i / hw) % channels;
            // The same single-precision fused multiply-add the GPU does.
            v.mul_add(scale[c], bias[c]).max(0.0)
        })
        .collect();
    out("y", Data::F32(y))
}

/// The sum of all elements, accumulated in f64.
fn sum(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let total: f64 = inputs[0].data.as_f32().iter().map(|&v| v as f64).sum();
    out("total", Data::F32(vec![total as f32]))
}

/// 3-point weighted moving average (1/4, 1/2, 1/4) with clamped ends.
fn smooth3(p: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let n = param(p, "n");
    let x = inputs[0].data.as_f32();
    let at = |i: isize| x[i.clamp(0, n as isize - 1) as usize] as f64;
    let y = (0..n as isize).map(|i| (0.25 * at(i - 1) + 0.5 * at(i) + 0.25 * at(i + 1)) as f32).collect();
    out("y", Data::F32(y))
}

/// 256-bin histogram of 12-bit values, bin = value >> 4.
fn histogram256(_: &Params, inputs: &[Buffer]) -> Vec<Buffer> {
    let mut bins = vec![0u32; 256];
    for &v in inputs[0].data.as_u32() {
        bins[((v >> 4) & 255) as usize] += 1;
    }
    out("bins", Data::U32(bins))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, i64)]) -> Params {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }
    fn f32s(name: &str, v: Vec<f32>) -> Buffer {
        Buffer { name: name.into(), data: Data::F32(v) }
    }

    #[test]
    fn transpose_of_a_2x3() {
        let r = transpose(&params(&[("rows", 2), ("cols", 3)]), &[f32s("in", vec![1., 2., 3., 4., 5., 6.])]);
        assert_eq!(r[0].data, Data::F32(vec![1., 4., 2., 5., 3., 6.]));
    }

    #[test]
    fn relu_uses_the_channel_of_each_element() {
        let p = params(&[("batch", 1), ("channels", 2), ("hw", 2)]);
        let r = scale_bias_relu(
            &p,
            &[f32s("x", vec![1., -1., 1., -1.]), f32s("scale", vec![2., 3.]), f32s("bias", vec![0., 1.])],
        );
        assert_eq!(r[0].data, Data::F32(vec![2., 0., 4., 0.]));
    }

    #[test]
    fn smooth_clamps_the_ends() {
        let r = smooth3(&params(&[("n", 3)]), &[f32s("x", vec![4., 8., 0.])]);
        assert_eq!(r[0].data, Data::F32(vec![5., 5., 2.]));
    }

    #[test]
    fn histogram_bins_by_high_bits() {
        let r = histogram256(&Params::new(), &[Buffer { name: "x".into(), data: Data::U32(vec![0, 15, 16, 4095]) }]);
        let Data::U32(b) = &r[0].data else { panic!() };
        assert_eq!((b[0], b[1], b[255], b.iter().sum::<u32>()), (2, 1, 1, 4));
    }

    #[test]
    fn every_name_resolves() {
        for name in names() {
            assert!(lookup(name).is_some());
        }
        assert!(lookup("nope").is_none());
    }
}
