// 37-shfl-width: a batch of dot products, row r of `a` with row r of `b` (similarity scores,
// attention logits, the residuals of a batch of least-squares fits).
//
// One warp per row: lane l multiplies and adds the columns l, l + 32, l + 64, ... in a register,
// then the warp adds its 32 partial sums with shuffles and lane 0 writes the row's result.
// Run it plainly and compare. Run the check and see what the tools say.
#include "cudabugs.cuh"

constexpr int BLOCK = 256;  // 8 warps: 8 rows per block
constexpr int WARP = 32;

// ANCHOR: bug
// The sum of v over the 32 lanes of the warp, in lane 0. Each step adds the value held `offset`
// lanes up: after offsets 16, 8, 4, 2, 1 lane 0 holds all 32.
__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset, 16);
  return v;
}
// ANCHOR_END: bug

__global__ void row_dots(const float* a, const float* b, float* dots, int rows, int cols) {
  const int row = (blockIdx.x * blockDim.x + threadIdx.x) / WARP;
  const int lane = threadIdx.x % WARP;
  if (row >= rows) return;  // the whole warp: its 32 lanes share the row
  const float* ra = a + static_cast<size_t>(row) * cols;
  const float* rb = b + static_cast<size_t>(row) * cols;
  float v = 0.0f;
  for (int c = lane; c < cols; c += WARP) v = fmaf(ra[c], rb[c], v);
  v = warp_sum(v);
  if (lane == 0) dots[row] = v;
}

void cb_run(cb::Io& io) {
  const int rows = static_cast<int>(io.param("rows"));
  const int cols = static_cast<int>(io.param("cols"));
  const size_t n = static_cast<size_t>(rows) * cols;
  const float* h_a = io.input<float>("a");
  const float* h_b = io.input<float>("b");
  float* h_dots = io.output<float>("dots");

  float *d_a, *d_b, *d_dots;
  CB_CHECK(cudaMalloc(&d_a, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_b, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_dots, rows * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_a, h_a, n * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemcpy(d_b, h_b, n * sizeof(float), cudaMemcpyHostToDevice));
  const int rows_per_block = BLOCK / WARP;
  row_dots<<<(rows + rows_per_block - 1) / rows_per_block, BLOCK>>>(d_a, d_b, d_dots, rows, cols);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_dots, d_dots, rows * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_a));
  CB_CHECK(cudaFree(d_b));
  CB_CHECK(cudaFree(d_dots));
}
