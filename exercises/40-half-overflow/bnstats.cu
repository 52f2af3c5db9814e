// 40-half-overflow: the mean of each channel of a batch of activations, the first statistic of
// batch normalisation in a mixed-precision network.
//
// The activations arrive as floats, channel by channel: channel c holds `count` values (batch x
// height x width), all in [0, 1). The network keeps its activations in half precision (__half:
// half the memory and bandwidth of float), so a first kernel packs them. The second averages each
// channel with one block of 256 threads: each thread adds every 256th value of the channel, a tree
// in shared memory adds the 256 partial sums, and thread 0 divides by the count. The reduction
// works in half precision too.
// Run it plainly and small batches come out right. Run the check and compare the large ones.
#include <cuda_fp16.h>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

// The activations as the rest of the network stores them.
__global__ void pack_half(const float* x, __half* h, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    h[i] = __float2half(x[i]);
}

// ANCHOR: bug
// One block per channel: the mean of its `count` values.
__global__ void channel_mean(const __half* act, int count, float* mean) {
  __shared__ __half s[BLOCK];
  const __half* channel = act + static_cast<size_t>(blockIdx.x) * count;
  const int t = threadIdx.x;
  __half acc = __float2half(0.0f);
  for (int i = t; i < count; i += BLOCK) acc = __hadd(acc, channel[i]);
  s[t] = acc;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] = __hadd(s[t], s[t + stride]);
    __syncthreads();
  }
  if (t == 0) mean[blockIdx.x] = __half2float(s[0]) / count;
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int channels = static_cast<int>(io.param("channels"));
  const int count = static_cast<int>(io.param("count"));
  const size_t n = static_cast<size_t>(channels) * count;
  const float* h_x = io.input<float>("act");
  float* h_mean = io.output<float>("mean");

  float *d_x, *d_mean;
  __half* d_h;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_h, n * sizeof(__half)));
  CB_CHECK(cudaMalloc(&d_mean, channels * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  const size_t blocks = (n + BLOCK - 1) / BLOCK;
  pack_half<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), BLOCK>>>(d_x, d_h, n);
  CB_CHECK(cudaGetLastError());
  channel_mean<<<channels, BLOCK>>>(d_h, count, d_mean);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_mean, d_mean, channels * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_h));
  CB_CHECK(cudaFree(d_mean));
}
