// 53-divergence: a signal stored as interleaved pairs (even index: amplitude, odd index: phase
// offset), each element relaxed through STEPS steps of its own recurrence:
//   even i: v <- fma(v, 0.999, 0.001)   (amplitudes relax towards 1)
//   odd i:  v <- fma(v, -0.5, 1.0)      (phases settle at 2/3)
// Both are STEPS fused multiply-adds, computed in order so every bit matches the reference.
//
// The answer is right. It is slow: count how many lanes of a warp do useful work.
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int STEPS = 512;

__device__ float relax_amplitude(float v) {
  for (int s = 0; s < STEPS; s++) v = fmaf(v, 0.999f, 0.001f);
  return v;
}

__device__ float relax_phase(float v) {
  for (int s = 0; s < STEPS; s++) v = fmaf(v, -0.5f, 1.0f);
  return v;
}

// ANCHOR: kernel
// Give each warp one kind of element: warps alternate between 32 even and 32 odd elements, so the
// branch is the same for all 32 lanes (the loads become stride-2, which costs little here: the
// kernel spends its time computing, not reading).
__global__ void relax(const float* x, float* y, int n) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int warp = t / 32, lane = t % 32;
  const int parity = warp % 2;                      // even warps: even elements
  const int i = 2 * ((warp / 2) * 32 + lane) + parity;
  if (i >= n) return;
  if (parity == 0) {
    y[i] = relax_amplitude(x[i]);
  } else {
    y[i] = relax_phase(x[i]);
  }
}

void launch_relax(const float* x, float* y, int n) {
  // Enough warps to cover n rounded up to whole pairs of warps (64 elements).
  const int threads = (n + 63) / 64 * 64;
  relax<<<(threads + BLOCK - 1) / BLOCK, BLOCK>>>(x, y, n);
}
// ANCHOR_END: kernel

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, io.input<float>("x"), n * sizeof(float), cudaMemcpyHostToDevice));
  launch_relax(d_x, d_y, n);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(io.output<float>("y"), d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
