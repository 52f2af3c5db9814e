// 51-coalesce: the sum of every row of a tall matrix (row-major, `rows` x `cols` floats), e.g. the
// per-sample totals of a feature table before normalising it.
//
// The answer is right. It is slow: see how the threads of one warp walk through memory.
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

// ANCHOR: kernel
// One thread per row: thread r adds up row r from left to right. Simple, and every thread does the
// same amount of work.
__global__ void row_sums(const float* m, float* sums, int rows, int cols) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* row = m + static_cast<size_t>(r) * cols;
  float acc = 0.0f;
  for (int c = 0; c < cols; c++) acc += row[c];
  sums[r] = acc;
}

void launch_row_sums(const float* m, float* sums, int rows, int cols) {
  row_sums<<<(rows + BLOCK - 1) / BLOCK, BLOCK>>>(m, sums, rows, cols);
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
