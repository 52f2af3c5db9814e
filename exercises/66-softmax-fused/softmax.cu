// 66-softmax-fused: softmax over each row of a matrix of scores (attention weights, a classifier's
// probabilities): y[r][c] = exp(x[r][c] - m) / sum over c' of exp(x[r][c'] - m), m the row's
// maximum, subtracted so that exp() cannot overflow.
//
// Four steps, each its own kernel and each a model of its kind (one block per row, coalesced
// loads and stores, reductions in registers): the row maxima, the shifted exponentials written to
// a scratch matrix, the row sums of that matrix, and the division.
//
// The answer is right (to float rounding). It is slow: count the bytes each kernel moves to and
// from DRAM, and the bytes a softmax has to move.
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

// The block's reduction of one value per thread with `op`: shuffles inside each warp, then the
// eight warp results through shared memory. Every thread gets the result.
template <class Op>
__device__ float block_reduce(float v, Op op) {
  __shared__ float warp_result[BLOCK / 32];
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  __syncthreads();  // every thread has read the previous call's results
  if (threadIdx.x % 32 == 0) warp_result[threadIdx.x / 32] = v;
  __syncthreads();
  v = warp_result[0];
  for (int w = 1; w < BLOCK / 32; ++w) v = op(v, warp_result[w]);
  return v;
}

struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// ANCHOR: kernel
// Step 1: the maximum of each row.
__global__ void row_max(const float* x, float* mx, int cols) {
  const float* row = x + static_cast<size_t>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, row[c]);
  m = block_reduce(m, Max{});
  if (threadIdx.x == 0) mx[blockIdx.x] = m;
}

// Step 2: the numerators, e = exp(x - m).
__global__ void exp_shift(const float* x, const float* mx, float* e, int cols) {
  const size_t base = static_cast<size_t>(blockIdx.x) * cols;
  const float m = mx[blockIdx.x];
  for (int c = threadIdx.x; c < cols; c += BLOCK) e[base + c] = __expf(x[base + c] - m);
}

// Step 3: the denominators, the sum of each row of e.
__global__ void row_sum(const float* e, float* sum, int cols) {
  const float* row = e + static_cast<size_t>(blockIdx.x) * cols;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += BLOCK) s += row[c];
  s = block_reduce(s, Add{});
  if (threadIdx.x == 0) sum[blockIdx.x] = s;
}

// Step 4: y = e / sum.
__global__ void normalise(const float* e, const float* sum, float* y, int cols) {
  const size_t base = static_cast<size_t>(blockIdx.x) * cols;
  const float inv = 1.0f / sum[blockIdx.x];
  for (int c = threadIdx.x; c < cols; c += BLOCK) y[base + c] = e[base + c] * inv;
}

void softmax(const float* d_x, float* d_y, int rows, int cols) {
  float *d_max, *d_sum, *d_e;
  CB_CHECK(cudaMalloc(&d_max, rows * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_sum, rows * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_e, static_cast<size_t>(rows) * cols * sizeof(float)));
  row_max<<<rows, BLOCK>>>(d_x, d_max, cols);
  exp_shift<<<rows, BLOCK>>>(d_x, d_max, d_e, cols);
  row_sum<<<rows, BLOCK>>>(d_e, d_sum, cols);
  normalise<<<rows, BLOCK>>>(d_e, d_sum, d_y, cols);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaFree(d_max));
  CB_CHECK(cudaFree(d_sum));
  CB_CHECK(cudaFree(d_e));
}
// ANCHOR_END: kernel

void cb_run(cb::Io& io) {
  const int rows = static_cast<int>(io.param("rows"));
  const int cols = static_cast<int>(io.param("cols"));
  const size_t n = static_cast<size_t>(rows) * cols;
  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, io.input<float>("x"), n * sizeof(float), cudaMemcpyHostToDevice));
  softmax(d_x, d_y, rows, cols);
  CB_CHECK(cudaMemcpy(io.output<float>("y"), d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
