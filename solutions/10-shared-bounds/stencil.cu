// 10-shared-bounds: a 7-point smoothing stencil (weights 1 2 3 4 3 2 1, over 16) on a long signal.
//
// Each block stages its BLOCK samples plus a halo of RADIUS samples on each side in shared memory,
// so that every input is read from global memory once instead of seven times. Ends are clamped.
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int RADIUS = 3;

__device__ int clamp_index(int i, int n) { return min(max(i, 0), n - 1); }

__global__ void smooth7(const float* x, float* y, int n) {
  // ANCHOR: bug
  // The block's samples, with RADIUS halo samples before and after them.
  __shared__ float tile[BLOCK + 2 * RADIUS];
  // ANCHOR_END: bug
  const int t = threadIdx.x;
  const int base = blockIdx.x * BLOCK;
  // ANCHOR: load
  tile[RADIUS + t] = x[clamp_index(base + t, n)];
  if (t < RADIUS) {
    tile[t] = x[clamp_index(base - RADIUS + t, n)];
    tile[RADIUS + BLOCK + t] = x[clamp_index(base + BLOCK + t, n)];
  }
  // ANCHOR_END: load
  __syncthreads();
  const int i = base + t;
  if (i < n) {
    const float* c = &tile[RADIUS + t];
    y[i] = (c[-3] + 2.0f * c[-2] + 3.0f * c[-1] + 4.0f * c[0] + 3.0f * c[1] + 2.0f * c[2] + c[3]) / 16.0f;
  }
}

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");

  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  smooth7<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(d_x, d_y, n);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
