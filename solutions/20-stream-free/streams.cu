// 20-stream-free: y = 2x + 1, with the input in memory from the stream-ordered allocator.
//
// Two streams share the work: uploads go on a copy stream, kernels on a compute stream, so that a
// pipeline of many calls overlaps copies with kernels. The input lives in memory from
// cudaMallocAsync: allocated, filled and given back on the copy stream, with no cudaDeviceSynchronize
// anywhere. An event orders the kernel after the upload.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int MAX_BLOCKS = 1024;

// ANCHOR: bug
__global__ void two_x_plus_one(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2.0f * x[i] + 1.0f;
}

// Upload h_x on `copy`, transform it into d_y on `compute`. Returns without waiting for either.
void transform(const float* h_x, float* d_y, int n, cudaStream_t copy, cudaStream_t compute) {
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);
  float* d_x;
  CB_CHECK(cudaMallocAsync(&d_x, n * sizeof(float), copy));
  CB_CHECK(cudaMemcpyAsync(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice, copy));
  cudaEvent_t uploaded;
  CB_CHECK(cudaEventCreateWithFlags(&uploaded, cudaEventDisableTiming));
  CB_CHECK(cudaEventRecord(uploaded, copy));
  CB_CHECK(cudaStreamWaitEvent(compute, uploaded));  // the kernel starts after the upload
  two_x_plus_one<<<blocks, BLOCK, 0, compute>>>(d_x, d_y, n);
  CB_CHECK(cudaGetLastError());
  // The free is ordered on `copy`, which knows nothing of `compute`: make `copy` wait for the
  // kernel first, with a second event recorded after the launch. Then the pool cannot hand the
  // memory to anyone before the kernel is done with it.
  cudaEvent_t consumed;
  CB_CHECK(cudaEventCreateWithFlags(&consumed, cudaEventDisableTiming));
  CB_CHECK(cudaEventRecord(consumed, compute));
  CB_CHECK(cudaStreamWaitEvent(copy, consumed));
  CB_CHECK(cudaFreeAsync(d_x, copy));
  CB_CHECK(cudaEventDestroy(uploaded));
  CB_CHECK(cudaEventDestroy(consumed));
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");
  if (n == 0) return;

  cudaStream_t copy, compute;
  CB_CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
  CB_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  float* d_y;
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));

  transform(h_x, d_y, n, copy, compute);

  CB_CHECK(cudaMemcpyAsync(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost, compute));
  CB_CHECK(cudaStreamSynchronize(compute));
  CB_CHECK(cudaStreamSynchronize(copy));
  CB_CHECK(cudaFree(d_y));
  CB_CHECK(cudaStreamDestroy(copy));
  CB_CHECK(cudaStreamDestroy(compute));
}
