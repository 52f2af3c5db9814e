// 22-host-deref: subtract the mean from every sample, the first step of most normalisations.
//
// Pass 1 adds the samples: each block a grid-stride slice, then one atomicAdd per block into a
// single float on the device. The host turns the sum into the mean, one division, and passes the
// mean to pass 2 as a kernel argument.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int MAX_BLOCKS = 1024;

__global__ void sum_blocks(const float* x, int n, float* sum) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;
  float acc = 0.0f;
  for (int i = blockIdx.x * BLOCK + t; i < n; i += gridDim.x * BLOCK) acc += x[i];
  s[t] = acc;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) atomicAdd(sum, s[0]);
}

__global__ void subtract(const float* x, int n, float mean, float* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i] - mean;
}

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");
  if (n == 0) return;
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);

  float *d_x, *d_y, *d_sum;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_sum, sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));

  // ANCHOR: bug
  CB_CHECK(cudaMemset(d_sum, 0, sizeof(float)));
  sum_blocks<<<blocks, BLOCK>>>(d_x, n, d_sum);
  CB_CHECK(cudaGetLastError());
  // The mean, for pass 2: one division, on the host.
  const float mean = *d_sum / n;
  // ANCHOR_END: bug

  subtract<<<blocks, BLOCK>>>(d_x, n, mean, d_y);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
  CB_CHECK(cudaFree(d_sum));
}
