// 04-sync: 3-point smoothing of a long signal with a shared-memory tile and halo.
//
// y[i] = x[i-1]/4 + x[i]/2 + x[i+1]/4, the ends clamped. Each 256-thread block stages its 256
// elements plus one halo element on each side in shared memory, then every thread reads three
// neighbours from the tile. The first half of the block also fetches the left halo, the second half
// the right one, so the staging code was written as two branches.
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

__device__ float load_clamped(const float* x, int i, int n) { return x[min(max(i, 0), n - 1)]; }

__global__ void smooth3(const float* x, float* y, int n) {
  __shared__ float tile[BLOCK + 2];  // tile[0] and tile[BLOCK + 1] hold the halo
  const int t = threadIdx.x;
  const int i = blockIdx.x * BLOCK + t;

  // ANCHOR: bug
  // Stage the tile. Only the loads differ between the halves, so only they sit in branches.
  tile[t + 1] = load_clamped(x, i, n);
  if (t == 0) tile[0] = load_clamped(x, i - 1, n);
  if (t == BLOCK - 1) tile[BLOCK + 1] = load_clamped(x, i + 1, n);
  // One barrier that every thread of the block reaches, outside any divergent branch.
  __syncthreads();
  if (i < n) y[i] = 0.25f * tile[t] + 0.5f * tile[t + 1] + 0.25f * tile[t + 2];
  // ANCHOR_END: bug
}

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");

  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));

  smooth3<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(d_x, d_y, n);
  CB_CHECK(cudaGetLastError());

  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
