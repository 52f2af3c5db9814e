// 57-reduction: the sum of n floats, as every textbook first writes it: each block loads one value
// per thread into shared memory, adds them up in a tree, and adds its total to the result.
//
// The answer is right (to float rounding). It is slow: see which threads work at each step of the
// tree, and how many bytes per second that leaves for reading the input.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

// ANCHOR: kernel
// Read first, reduce once: a grid of a few blocks per SM walks the input with a grid-stride loop of
// float4 loads (16 bytes per lane, 512 per warp), each thread keeps its sum in a register, the warp
// adds its 32 sums with shuffles, and one atomicAdd per block adds the block's total.
__device__ float warp_total(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

__global__ void sum(const float* x, float* total, int n) {
  __shared__ float warp_sums[BLOCK / 32];
  const int t = threadIdx.x, stride = gridDim.x * blockDim.x;
  float acc = 0.0f;
  // cudaMalloc'd memory is 256-byte aligned: the first n / 4 * 4 values are whole float4s.
  const float4* x4 = reinterpret_cast<const float4*>(x);
  for (int i = blockIdx.x * blockDim.x + t; i < n / 4; i += stride) {
    const float4 v = x4[i];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  for (int i = n / 4 * 4 + blockIdx.x * blockDim.x + t; i < n; i += stride) acc += x[i];
  acc = warp_total(acc);
  if (t % 32 == 0) warp_sums[t / 32] = acc;
  __syncthreads();
  if (t < 32) {
    acc = warp_total(t < BLOCK / 32 ? warp_sums[t] : 0.0f);
    if (t == 0) atomicAdd(total, acc);
  }
}

void launch_sum(const float* x, float* total, int n) {
  if (n <= 0) return;
  int device, sms, per_sm;
  CB_CHECK(cudaGetDevice(&device));
  CB_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CB_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sum, BLOCK, 0));
  const int blocks = std::max(1, std::min((n / 4 + BLOCK - 1) / BLOCK, sms * per_sm));
  sum<<<blocks, BLOCK>>>(x, total, n);
}
// ANCHOR_END: kernel

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  float *d_x, *d_total;
  CB_CHECK(cudaMalloc(&d_x, std::max(n, 1) * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_total, sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, io.input<float>("x"), n * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemset(d_total, 0, sizeof(float)));
  launch_sum(d_x, d_total, n);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(io.output<float>("total"), d_total, sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_total));
}
