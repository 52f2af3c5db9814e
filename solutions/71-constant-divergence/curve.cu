// 71-constant-divergence: a calibration curve applied to every sample of a long signal.
//
// The curve is a table of 4097 values on [0, 1] (a sensor's measured response, a tone curve, a
// transfer function): a sample v in [0, 1] falls between entries k and k + 1, k = floor(4096 v),
// and the output interpolates linearly between them. Samples outside [0, 1] are clamped.
// A grid-stride loop over the samples, one full wave of blocks.
//
// The answer is right. It is slow: see which memory the table is read from, and how many
// different entries the 32 lanes of a warp ask it for at once.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int MAX_BLOCKS = 1056;  // 8 blocks of 256 threads on each of an H100's 132 SMs
constexpr int SEGMENTS = 4096;    // the table has SEGMENTS + 1 entries

// ANCHOR: kernel
// The table in global memory, copied into shared memory by each block: 16 KB a block, at most
// 1056 blocks, so about 17 MB of copies beside the hundreds of MB the samples take. Shared memory
// serves 32 different addresses in one pass when they sit in different banks; random entries
// share a bank with a few others at most. The constant cache serves one address per pass.
__global__ void apply_curve(const float* x, const float* table, float* y, int n) {
  __shared__ float curve[SEGMENTS + 1];
  for (int j = threadIdx.x; j <= SEGMENTS; j += blockDim.x) curve[j] = table[j];
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float u = fminf(fmaxf(x[i], 0.0f), 1.0f) * SEGMENTS;
    const int k = min(static_cast<int>(u), SEGMENTS - 1);
    const float f = u - static_cast<float>(k);
    y[i] = fmaf(f, curve[k + 1] - curve[k], curve[k]);
  }
}

void run_curve(const float* h_curve, const float* d_x, float* d_y, int n, int blocks) {
  float* d_curve;
  CB_CHECK(cudaMalloc(&d_curve, (SEGMENTS + 1) * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_curve, h_curve, (SEGMENTS + 1) * sizeof(float), cudaMemcpyHostToDevice));
  apply_curve<<<blocks, BLOCK>>>(d_x, d_curve, d_y, n);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaFree(d_curve));
}
// ANCHOR_END: kernel

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const float* h_x = io.input<float>("x");
  const float* h_curve = io.input<float>("curve");
  float* h_y = io.output<float>("y");
  const int blocks = std::max(1, std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS));

  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  run_curve(h_curve, d_x, d_y, n, blocks);
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
