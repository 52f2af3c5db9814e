// 13-early-return: the sum of every 256-sample segment of a signal (a block's worth each), the
// first level of a multi-level reduction or the energy of each frame of audio.
//
// One block per segment: each thread loads one sample into shared memory, then a tree halves the
// number of active threads each step, a barrier between steps.
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

__global__ void segment_sums(const float* x, int n, float* sums) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;
  const int i = blockIdx.x * BLOCK + t;
  // ANCHOR: bug
  // Threads past the end of the signal have nothing to load: they are done.
  if (i >= n) return;
  s[t] = x[i];
  // ANCHOR_END: bug
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) sums[blockIdx.x] = s[0];
}

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const int segments = static_cast<int>(io.param("segments"));  // (n + 255) / 256
  const float* h_x = io.input<float>("x");
  float* h_sums = io.output<float>("sums");

  float *d_x, *d_sums;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_sums, segments * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  segment_sums<<<segments, BLOCK>>>(d_x, n, d_sums);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_sums, d_sums, segments * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_sums));
}
