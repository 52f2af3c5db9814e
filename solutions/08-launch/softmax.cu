// 08-launch: softmax over each row of a matrix of scores (attention, classification heads).
//
// One block per row: the block finds the row's maximum, sums exp(x - max), and writes
// exp(x - max) / sum. Subtracting the maximum keeps exp() from overflowing.
#include "cudabugs.cuh"

constexpr int MAX_THREADS = 1024;  // the most threads a block may have on every GPU since 2010
constexpr int BLOCK = 256;

// Reduce one value per thread over the block with `op`, in shared memory; every thread gets the
// result. Any block size up to MAX_THREADS works: the tree runs over the next power of two.
template <class Op>
__device__ float block_reduce(float v, Op op) {
  __shared__ float s[MAX_THREADS];
  const int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  int width = 1;
  while (width < blockDim.x) width <<= 1;
  for (int stride = width / 2; stride > 0; stride >>= 1) {
    if (t < stride && t + stride < blockDim.x) s[t] = op(s[t], s[t + stride]);
    __syncthreads();
  }
  const float result = s[0];
  __syncthreads();  // s is written again by the next call
  return result;
}

struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// ANCHOR: bug
// Each thread handles the columns t, t + blockDim.x, ...: any row length fits a block of BLOCK.
__global__ void softmax_rows(const float* x, float* y, int cols) {
  const float* row = x + static_cast<size_t>(blockIdx.x) * cols;
  float* out = y + static_cast<size_t>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  m = block_reduce(m, Max{});
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += __expf(row[c] - m);
  sum = block_reduce(sum, Add{});
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = __expf(row[c] - m) / sum;
}

void launch_softmax(const float* d_x, float* d_y, int rows, int cols) {
  softmax_rows<<<rows, BLOCK>>>(d_x, d_y, cols);
  CB_CHECK(cudaGetLastError());
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int rows = static_cast<int>(io.param("rows"));
  const int cols = static_cast<int>(io.param("cols"));
  const size_t n = static_cast<size_t>(rows) * cols;
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");

  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  launch_softmax(d_x, d_y, rows, cols);
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
