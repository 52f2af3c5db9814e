// 34-managed-race: logistic growth of many populations, in unified (managed) memory.
//
// Population i starts at x[i], as a share of what its habitat can feed (above 1: overcrowded), and
// grows (or shrinks) by RATE * p * (1 - p) in each time step; y[i] is its size after `steps` steps.
// Each step is computed in the same order, rounded the same way, as the Rust reference.
// x and y live in managed memory (cudaMallocManaged): one pointer that the host and the GPU both
// read and write, with no cudaMemcpy, the driver moving each page to whoever touches it.
// Run it plainly and look at y. Run the check and see what the tool says.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr float RATE = 1.0f / 64.0f;  // a power of two: RATE * p is exact

// `steps` time steps of p <- p + RATE * p * (1 - p): a multiply, a subtract and one fused
// multiply-add each, one after another (each step needs the last one's p).
__device__ float grow_for(float p, int steps) {
  for (int s = 0; s < steps; s++) p = fmaf(RATE * p, 1.0f - p, p);
  return p;
}

// One thread per population; each writes its y[i] once, when all its steps are done.
__global__ void grow(const float* x, float* y, int n, int steps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = grow_for(x[i], steps);
}

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const int steps = static_cast<int>(io.param("steps"));
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");

  float *x, *y;
  CB_CHECK(cudaMallocManaged(&x, n * sizeof(float)));
  CB_CHECK(cudaMallocManaged(&y, n * sizeof(float)));
  // The host writes the starting sizes straight into managed memory.
  std::copy(h_x, h_x + n, x);

  // ANCHOR: bug
  grow<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, y, n, steps);
  CB_CHECK(cudaGetLastError());
  // Managed memory: the host reads the results straight through the pointer, no copy back.
  std::copy(y, y + n, h_y);
  // ANCHOR_END: bug

  CB_CHECK(cudaFree(x));
  CB_CHECK(cudaFree(y));
}
