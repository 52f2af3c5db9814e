// 12-syncwarp: the sum of each row of an n x 16 matrix (16 features per sample).
//
// A warp takes two rows: lanes 0-15 the first, lanes 16-31 the second. Each half-warp sums its 16
// values in shared memory, halving the number of active lanes each step. Lanes of one warp must
// be synchronised between the steps: `__syncwarp(mask)` waits for the lanes named in `mask`.
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int COLS = 16;

__global__ void row_sums16(const float* x, int rows, float* y) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;
  const int lane = t % 32, half = lane / 16, col = lane % 16;
  const int row = (blockIdx.x * BLOCK + t) / COLS;
  s[t] = row < rows ? x[static_cast<size_t>(row) * COLS + col] : 0.0f;
  // ANCHOR: bug
  // The lanes of this thread's half-warp: every lane that calls __syncwarp must be in its mask.
  const unsigned mask = half == 0 ? 0x0000ffffu : 0xffff0000u;
  for (int offset = COLS / 2; offset > 0; offset >>= 1) {
    __syncwarp(mask);
    if (col < offset) s[t] += s[t + offset];
  }
  // ANCHOR_END: bug
  __syncwarp(mask);
  if (col == 0 && row < rows) y[row] = s[t];
}

void cb_run(cb::Io& io) {
  const int rows = static_cast<int>(io.param("rows"));
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");
  const size_t n = static_cast<size_t>(rows) * COLS;

  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, rows * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  const int blocks = static_cast<int>((n + BLOCK - 1) / BLOCK);
  row_sums16<<<blocks, BLOCK>>>(d_x, rows, d_y);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_y, d_y, rows * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
