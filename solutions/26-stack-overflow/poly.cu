// 26-stack-overflow: one polynomial evaluated at many points (a fitted calibration curve, a series
// approximation of a function), one thread per point.
//
// Horner's rule, written the way it is defined: p_k(x) = c[k] + x * p_{k+1}(x), with p_terms = 0,
// so p_0(x) = c[0] + c[1] x + ... + c[terms - 1] x^(terms - 1) with one multiply-add per term.
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

// ANCHOR: bug
// The same multiply-adds in the same order, as a loop: start from the last coefficient and work
// down. No recursion, so no stack: any number of terms runs in the registers of one thread.
__device__ float horner(const float* c, int terms, float x) {
  float p = 0.0f;
  for (int k = terms - 1; k >= 0; k--) p = c[k] + x * p;
  return p;
}

__global__ void polyval(const float* x, const float* c, float* y, int n, int terms) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = horner(c, terms, x[i]);
}

void launch_polyval(const float* d_x, const float* d_c, float* d_y, int n, int terms) {
  polyval<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(d_x, d_c, d_y, n, terms);
  CB_CHECK(cudaGetLastError());
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const int terms = static_cast<int>(io.param("terms"));
  const float* h_x = io.input<float>("x");
  const float* h_c = io.input<float>("c");
  float* h_y = io.output<float>("y");

  float *d_x, *d_c, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_c, terms * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemcpy(d_c, h_c, terms * sizeof(float), cudaMemcpyHostToDevice));
  launch_polyval(d_x, d_c, d_y, n, terms);
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_c));
  CB_CHECK(cudaFree(d_y));
}
