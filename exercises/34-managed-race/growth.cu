// 34-managed-race: logistic growth of many populations, in unified (managed) memory.
//
// Population i starts at x[i], as a share of what its habitat can feed (above 1: overcrowded), and
// grows (or shrinks) by RATE * p * (1 - p) in each time step; y[i] is its size after `steps` steps,
// and settled[i] how many of those steps changed it (every population settles at its habitat's
// capacity, sooner or later, so the sizes all end near 1 and the step counts tell them apart).
// Each step is computed in the same order, rounded the same way, as the Rust reference.
// x and y live in managed memory (cudaMallocManaged): one pointer that the host and the GPU both
// read and write, with no cudaMemcpy, the driver moving each page to whoever touches it.
// Run it plainly and look at y. Run the check and see what the tool says.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr float RATE = 1.0f / 64.0f;  // a power of two: RATE * p is exact

// `steps` time steps of p <- p + RATE * p * (1 - p): a multiply, a subtract and one fused
// multiply-add each, one after another (each step needs the last one's p). *changed is the number
// of steps that moved p: a step is a function of p alone, so once one leaves p as it was, all do.
__device__ float grow_for(float p, int steps, unsigned* changed) {
  unsigned last = 0;
  for (int s = 0; s < steps; s++) {
    const float next = fmaf(RATE * p, 1.0f - p, p);
    if (next != p) last = s + 1;
    p = next;
  }
  *changed = last;
  return p;
}

// One thread per population; each writes its y[i] and settled[i] once, when all its steps are done.
__global__ void grow(const float* x, float* y, unsigned* settled, int n, int steps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    unsigned changed;
    y[i] = grow_for(x[i], steps, &changed);
    settled[i] = changed;
  }
}

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const int steps = static_cast<int>(io.param("steps"));
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");
  unsigned* h_settled = io.output<unsigned>("settled");

  float *x, *y;
  unsigned* settled;
  CB_CHECK(cudaMallocManaged(&x, n * sizeof(float)));
  CB_CHECK(cudaMallocManaged(&y, n * sizeof(float)));
  CB_CHECK(cudaMallocManaged(&settled, n * sizeof(unsigned)));
  // The host writes the starting sizes straight into managed memory.
  std::copy(h_x, h_x + n, x);

  // ANCHOR: bug
  grow<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, y, settled, n, steps);
  CB_CHECK(cudaGetLastError());
  // Managed memory: the host reads the results straight through the pointer, no copy back.
  std::copy(y, y + n, h_y);
  std::copy(settled, settled + n, h_settled);
  // ANCHOR_END: bug

  CB_CHECK(cudaFree(x));
  CB_CHECK(cudaFree(y));
  CB_CHECK(cudaFree(settled));
}
