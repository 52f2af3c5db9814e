// 63-transfers: Newton's law of cooling for a batch of bodies: body i starts at x[i] degrees Celsius
// in a room at 20 degrees and loses 1/1024 of its difference to the room in each time step; y[i] is
// its temperature after `steps` time steps. Each step is one fused multiply-add, computed in order
// so every bit matches the reference.
//
// The answer is right. It is slow: look at what the GPU's copy engines and its SMs do during the
// call, and when.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr float AMBIENT = 20.0f;        // the room, in degrees Celsius
constexpr float RATE = 1.0f / 1024.0f;  // the share of the gap to the room closed in one step

// `steps` explicit time steps of T <- T + RATE * (AMBIENT - T), written as one fused multiply-add,
// T * (1 - RATE) + RATE * AMBIENT; both constants are exact in float.
__device__ float cool_for(float t, int steps) {
  for (int s = 0; s < steps; s++) t = fmaf(t, 1.0f - RATE, RATE * AMBIENT);
  return t;
}

// ANCHOR: pipeline
// One thread per body. At the timed run's 2560 steps the kernel takes about as long on the SMs as
// the copies of the temperatures over PCIe.
__global__ void cool(const float* x, float* y, size_t n, int steps) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = cool_for(x[i], steps);
}

// Copy every temperature to the GPU, cool them all, copy every result back. The host buffers are
// pinned (the harness allocates them with cudaMallocHost), so each copy runs at full PCIe speed.
void cool_on_gpu(const float* h_x, float* h_y, size_t n, int steps) {
  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  if (n > 0) cool<<<static_cast<unsigned>((n + BLOCK - 1) / BLOCK), BLOCK>>>(d_x, d_y, n, steps);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
// ANCHOR_END: pipeline

void cb_run(cb::Io& io) {
  const size_t n = static_cast<size_t>(io.param("n"));
  const int steps = static_cast<int>(io.param("steps"));
  cool_on_gpu(io.input<float>("x"), io.output<float>("y"), n, steps);
}
