// 52-bank-conflicts: out = 0.5 * transpose(in) for a `rows` x `cols` row-major matrix (`cols` x
// `rows` out), through a 32 x 32 tile in shared memory so that both the global reads and the global
// writes are coalesced.
//
// The answer is right, and both global sides are coalesced. It is still slow: see how the warp
// reads the tile back.
#include "cudabugs.cuh"

constexpr int TILE = 32;
constexpr int ROWS_PER_PASS = 8;  // blockDim = (32, 8): each thread moves 4 elements of the tile

// ANCHOR: kernel
__global__ void transpose_half(const float* in, float* out, int rows, int cols) {
  __shared__ float tile[TILE][TILE];
  const int x = blockIdx.x * TILE + threadIdx.x;  // column read
  const int y0 = blockIdx.y * TILE;
  for (int j = threadIdx.y; j < TILE; j += ROWS_PER_PASS) {
    const int y = y0 + j;
    if (x < cols && y < rows) tile[j][threadIdx.x] = in[static_cast<size_t>(y) * cols + x];
  }
  __syncthreads();
  // Write the tile back transposed: lane threadIdx.x writes row (x0 + j), column (y0 + lane) of out,
  // reading element [lane][j] of the tile.
  const int ox = y0 + threadIdx.x;  // column of out
  const int x0 = blockIdx.x * TILE;
  for (int j = threadIdx.y; j < TILE; j += ROWS_PER_PASS) {
    const int oy = x0 + j;  // row of out
    if (ox < rows && oy < cols) out[static_cast<size_t>(oy) * rows + ox] = 0.5f * tile[threadIdx.x][j];
  }
}
// ANCHOR_END: kernel

void cb_run(cb::Io& io) {
  const int rows = static_cast<int>(io.param("rows"));
  const int cols = static_cast<int>(io.param("cols"));
  const size_t len = static_cast<size_t>(rows) * cols;
  float *d_in, *d_out;
  CB_CHECK(cudaMalloc(&d_in, len * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_out, len * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_in, io.input<float>("a"), len * sizeof(float), cudaMemcpyHostToDevice));
  const dim3 block(TILE, ROWS_PER_PASS), grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
  transpose_half<<<grid, block>>>(d_in, d_out, rows, cols);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(io.output<float>("t"), d_out, len * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_in));
  CB_CHECK(cudaFree(d_out));
}
