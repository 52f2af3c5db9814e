//! The element types a buffer can hold, with the codes the harness shares (harness/cudabugs.cuh).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F32,
    F64,
    I32,
    U32,
}

impl DType {
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 => 8,
        }
    }
    /// The code the harness uses (harness/cudabugs.cuh keeps the same numbers).
    pub fn code(self) -> u8 {
        match self {
            DType::F32 => 1,
            DType::F64 => 2,
            DType::I32 => 3,
            DType::U32 => 4,
        }
    }
    pub fn from_code(code: u8) -> Option<DType> {
        [DType::F32, DType::F64, DType::I32, DType::U32]
            .into_iter()
            .find(|d| d.code() == code)
    }
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }
}
