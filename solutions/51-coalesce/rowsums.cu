// 51-coalesce: the sum of every row of a tall matrix (row-major, `rows` x `cols` floats), e.g. the
// per-sample totals of a feature table before normalising it.
//
// The answer is right. It is slow: see how the threads of one warp walk through memory.
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

// ANCHOR: kernel
// One warp per row: lane l reads columns l, l + 32, l + 64, ..., so the 32 lanes of each load read
// 32 neighbouring floats (one 128-byte line), then the lanes add their partial sums with shuffles.
__global__ void row_sums(const float* m, float* sums, int rows, int cols) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= rows) return;
  const float* row = m + static_cast<size_t>(warp) * cols;
  float acc = 0.0f;
#pragma unroll 4
  for (int c = lane; c < cols; c += 32) acc += row[c];
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, offset);
  if (lane == 0) sums[warp] = acc;
}

void launch_row_sums(const float* m, float* sums, int rows, int cols) {
  const long long threads = static_cast<long long>(rows) * 32;
  row_sums<<<static_cast<int>((threads + BLOCK - 1) / BLOCK), BLOCK>>>(m, sums, rows, cols);
}
// ANCHOR_END: kernel

void cb_run(cb::Io& io) {
  const int rows = static_cast<int>(io.param("rows"));
  const int cols = static_cast<int>(io.param("cols"));
  const size_t len = static_cast<size_t>(rows) * cols;
  float *d_m, *d_sums;
  CB_CHECK(cudaMalloc(&d_m, len * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_sums, rows * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_m, io.input<float>("m"), len * sizeof(float), cudaMemcpyHostToDevice));
  launch_row_sums(d_m, d_sums, rows, cols);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(io.output<float>("sums"), d_sums, rows * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_m));
  CB_CHECK(cudaFree(d_sums));
}
