//! How anything runs: one supervisor for every child process (`runner`), the `launcher` seam that
//! puts learner code in its `sandbox` (with a `cgroup` where the machine allows one), and the tools
//! the stages drive: nvcc, compute-sanitizer, ncu, and the GPU probe.

pub mod cgroup;
pub mod counters;
pub mod cpus;
pub mod driver;
pub mod gpu;
pub mod gpu_memory;
pub mod launcher;
pub mod lock;
pub mod ncu;
pub mod nvcc;
pub mod peak;
pub mod reach;
pub mod runner;
pub mod sandbox;
pub mod sanitizer;
pub mod sass;
pub mod seccomp;
pub mod served;
pub mod stub_compiler;
pub mod timeline;
pub mod toolchain;
