// 38-grid-sync: standardize a long vector in one kernel, as a layer norm does one row:
// y[i] = (x[i] - mean) / sqrt(var + 1e-5), with the mean and the (population) variance of all n
// values, accumulated in double.
//
// Every value needs two numbers that depend on every other value, so the kernel works in three
// phases with a barrier across the whole grid between them: each block sums its share of x; every
// block adds the blocks' sums up to the mean and sums its share of the squared deviations; every
// block adds those up to the variance and writes its share of y. The grid-stride loops let any
// number of blocks cover any n.
// Run it plainly and see what happens. Run the check and see what the tool says.
#include <algorithm>
#include <cooperative_groups.h>
#include "cudabugs.cuh"

namespace cg = cooperative_groups;

constexpr int BLOCK = 256;
constexpr double EPS = 1e-5;

// The sum of one double per thread of the block, returned to every thread: a tree in shared memory.
__device__ double block_sum(double v, double* s) {
  const int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  const double total = s[0];
  __syncthreads();  // s is free for the next sum
  return total;
}

// ANCHOR: bug
// grid.sync() waits until every thread of every block of the grid has arrived: the blocks' sums are
// all written before any block reads them.
__global__ void standardize(const float* x, float* y, double* sums, double* squares, int n) {
  cg::grid_group grid = cg::this_grid();
  __shared__ double s[BLOCK];
  const int t = threadIdx.x;
  const int first = blockIdx.x * BLOCK + t;
  const int stride = gridDim.x * BLOCK;

  double acc = 0.0;
  for (int i = first; i < n; i += stride) acc += x[i];
  const double block_total = block_sum(acc, s);
  if (t == 0) sums[blockIdx.x] = block_total;
  grid.sync();

  acc = 0.0;
  for (int b = t; b < gridDim.x; b += BLOCK) acc += sums[b];
  const double mean = block_sum(acc, s) / n;
  acc = 0.0;
  for (int i = first; i < n; i += stride) {
    const double d = x[i] - mean;
    acc += d * d;
  }
  const double block_squares = block_sum(acc, s);
  if (t == 0) squares[blockIdx.x] = block_squares;
  grid.sync();

  acc = 0.0;
  for (int b = t; b < gridDim.x; b += BLOCK) acc += squares[b];
  const double inv_std = 1.0 / sqrt(block_sum(acc, s) / n + EPS);
  for (int i = first; i < n; i += stride) y[i] = static_cast<float>((x[i] - mean) * inv_std);
}

// Standardize the n values at d_x into d_y and copy them to h_y. One block per 256 values, up to
// 2048 blocks: the grid-stride loops do the rest.
constexpr int MAX_BLOCKS = 2048;

void standardize_on_gpu(const float* d_x, float* d_y, float* h_y, int n) {
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);
  double *d_sums, *d_squares;
  CB_CHECK(cudaMalloc(&d_sums, blocks * sizeof(double)));
  CB_CHECK(cudaMalloc(&d_squares, blocks * sizeof(double)));
  standardize<<<blocks, BLOCK>>>(d_x, d_y, d_sums, d_squares, n);
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_sums));
  CB_CHECK(cudaFree(d_squares));
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");
  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  standardize_on_gpu(d_x, d_y, h_y, n);
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
