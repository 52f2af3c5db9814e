// 60-scan: the inclusive prefix sum of n floats, y[i] = x[0] + x[1] + ... + x[i], as Hillis and
// Steele wrote it for a machine with one processor per element: pass d adds to every element the
// one d places before it, for d = 1, 2, 4, ... below n.
//
// The answer is right (to float rounding). It is slow: count the passes, and the bytes each one
// moves through DRAM, against what a scan must move (read x once, write y once).
//
// `check` times the kernels that exercise.toml's [timing] names: scan_pass, tile_sums,
// scan_tile_sums, scan_tiles and add_tile_sums. Give your kernels names from that list.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

// ANCHOR: kernel
// One pass: out[i] = in[i] + in[i - d]. After the passes d = 1, 2, 4, ... < n, element i holds the
// sum of x[0 .. i]. The passes ping-pong between y and tmp, so that no pass reads what it writes,
// counted back from the last one, which writes y.
__global__ void scan_pass(const float* in, float* out, int n, int d) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i >= d ? in[i] + in[i - d] : in[i];
}

void launch_scan(const float* x, float* y, float* tmp, int n) {
  if (n <= 0) return;
  int passes = 1;  // n = 1: one pass copies x to y
  while ((1LL << passes) < n) passes++;
  const float* in = x;
  for (int p = 0; p < passes; p++) {
    float* out = (passes - 1 - p) % 2 == 0 ? y : tmp;
    scan_pass<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(in, out, n, 1 << p);
    in = out;
  }
}
// ANCHOR_END: kernel

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const size_t bytes = std::max(n, 1) * sizeof(float);
  float *d_x, *d_y, *d_tmp;  // tmp: n floats of scratch
  CB_CHECK(cudaMalloc(&d_x, bytes));
  CB_CHECK(cudaMalloc(&d_y, bytes));
  CB_CHECK(cudaMalloc(&d_tmp, bytes));
  CB_CHECK(cudaMemcpy(d_x, io.input<float>("x"), n * sizeof(float), cudaMemcpyHostToDevice));
  launch_scan(d_x, d_y, d_tmp, n);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(io.output<float>("y"), d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
  CB_CHECK(cudaFree(d_tmp));
}
