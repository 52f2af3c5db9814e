#!/usr/bin/env bash
# Test one group of references (grader/src/exercise/reference/GROUP.rs) with its unit tests, without
# building the grader: rustc compiles the group with the shared buffers (buffers.rs) and a stand-in
# for the element types, in a second or two. Usage: scripts/reference-check.sh GROUP [test filter]
set -eu
group=$1; shift
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/lib.rs" <<RS
#![allow(dead_code)]
mod exercise {
    pub mod dtype {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum DType { F32, F64, I32, U32 }
    }
}
use exercise::dtype::DType;
#[path = "$root/grader/src/exercise/reference/buffers.rs"]
mod buffers;
pub use buffers::{Buffer, Data, Params, ReferenceFn, Signature};
use buffers::{out, param};
#[path = "$root/grader/src/exercise/reference/$group.rs"]
mod $group;
#[test]
fn every_reference_has_a_signature() {
    for (name, _) in $group::REFERENCES {
        assert!($group::SIGNATURES.iter().any(|(n, _)| n == name), "{name} has no signature");
    }
}
RS
rustc --edition 2021 --test -O "$dir/lib.rs" -o "$dir/tests" 2>&1
"$dir/tests" "$@"
