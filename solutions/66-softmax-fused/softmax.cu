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
// One kernel, one block per row. The block reads its row from DRAM once, for the maximum; the
// sweeps for the sum and for the output read the same 4 KiB again a moment later, and find them in
// the SM's L1 cache. Nothing goes through a scratch matrix: DRAM sees x read once and y written once.
__global__ void softmax_fused(const float* x, float* y, int cols) {
  const size_t base = static_cast<size_t>(blockIdx.x) * cols;
  const float* row = x + base;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, row[c]);
  m = block_reduce(m, Max{});
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += BLOCK) s += __expf(row[c] - m);
  s = block_reduce(s, Add{});
  const float inv = 1.0f / s;
  for (int c = threadIdx.x; c < cols; c += BLOCK) y[base + c] = __expf(row[c] - m) * inv;
}

void softmax(const float* d_x, float* d_y, int rows, int cols) {
  softmax_fused<<<rows, BLOCK>>>(d_x, d_y, cols);
  CB_CHECK(cudaGetLastError());
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
