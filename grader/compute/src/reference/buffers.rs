//! What every reference shares: typed buffers in and out, and the parameters of a case. Kept
//! apart from the references so that `scripts/reference-check.sh` can test one group of references
//! without building the grader.

use std::collections::BTreeMap;

use crate::dtype::DType;

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
    pub(super) fn as_f32(&self) -> &[f32] {
        match self {
            Data::F32(v) => v,
            other => panic!("reference expected f32, got {:?}", other.dtype()),
        }
    }
    pub(super) fn as_u32(&self) -> &[u32] {
        match self {
            Data::U32(v) => v,
            other => panic!("reference expected u32, got {:?}", other.dtype()),
        }
    }
    pub(super) fn as_f64(&self) -> &[f64] {
        match self {
            Data::F64(v) => v,
            other => panic!("reference expected f64, got {:?}", other.dtype()),
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

/// What a reference reads and writes: buffers by name, dtype and length expression. A manifest that
/// names the reference must declare exactly these, so that every case it accepts can be computed.
pub struct Signature {
    pub inputs: &'static [(&'static str, DType, &'static str)],
    pub outputs: &'static [(&'static str, DType, &'static str)],
}

pub(super) fn param(p: &Params, name: &str) -> usize {
    usize::try_from(p[name]).expect("manifest validation keeps parameters non-negative")
}

pub(super) fn out(name: &str, data: Data) -> Vec<Buffer> {
    vec![Buffer {
        name: name.to_string(),
        data,
    }]
}
