// 27-async-copy: the sum of every row of a matrix, one block per row.
//
// The row streams through shared memory in tiles of TILE floats, double-buffered with cp.async
// (sm_80+): while the block sums tile k from one buffer, the copy engine of the SM fills the other
// with tile k + 1 straight from global memory, without passing through registers. Each thread
// copies 4 floats of a tile and then sums 4 others, so a tile must have landed for every thread,
// not only for the one that copied it, before anyone reads it.
#include <cuda_pipeline.h>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int TILE = 4 * BLOCK;

// Start copying tile k of the row into buf (zero-filled past the row's end) as one commit group.
__device__ void stage(float* buf, const float* row, int cols, int k) {
  for (int j = 0; j < 4; j++) {
    const int c = k * TILE + 4 * threadIdx.x + j;
    // The last argument is how many bytes to zero-fill instead of reading: all 4 past the end.
    __pipeline_memcpy_async(&buf[4 * threadIdx.x + j], row + min(c, cols - 1), sizeof(float), c < cols ? 0 : sizeof(float));
  }
  __pipeline_commit();
}

__global__ void row_sums(const float* m, float* sums, int cols) {
  __shared__ float buf[2][TILE];
  __shared__ float warp_sums[BLOCK / 32];
  const float* row = m + static_cast<size_t>(blockIdx.x) * cols;
  const int tiles = (cols + TILE - 1) / TILE;
  float acc = 0.0f;

  stage(buf[0], row, cols, 0);
  // ANCHOR: bug
  for (int k = 0; k < tiles; k++) {
    // Prefetch the next tile into the other buffer, and commit a group on every iteration, an
    // empty one after the last tile: then "all but the newest group" always means tile k.
    if (k + 1 < tiles) {
      stage(buf[(k + 1) % 2], row, cols, k + 1);
    } else {
      __pipeline_commit();
    }
    __pipeline_wait_prior(1);
    __syncthreads();  // the wait covers this thread's copies; the barrier, everyone else's
    for (int j = 0; j < 4; j++) acc += buf[k % 2][threadIdx.x + j * BLOCK];
    __syncthreads();  // every thread is done with buf[k % 2] before it is refilled
  }
  // ANCHOR_END: bug

  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < BLOCK / 32; w++) total += warp_sums[w];
    sums[blockIdx.x] = total;
  }
}

void cb_run(cb::Io& io) {
  const int rows = static_cast<int>(io.param("rows"));
  const int cols = static_cast<int>(io.param("cols"));
  const size_t n = static_cast<size_t>(rows) * cols;
  const float* h_m = io.input<float>("m");
  float* h_sums = io.output<float>("sums");

  float *d_m, *d_sums;
  CB_CHECK(cudaMalloc(&d_m, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_sums, rows * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_m, h_m, n * sizeof(float), cudaMemcpyHostToDevice));
  row_sums<<<rows, BLOCK>>>(d_m, d_sums, cols);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_sums, d_sums, rows * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_m));
  CB_CHECK(cudaFree(d_sums));
}
