// 01-index: tiled matrix transpose.
//
// out (cols x rows) is the transpose of in (rows x cols); both are row-major. Each 32x8 block moves
// one 32x32 tile through shared memory so that the global reads and the global writes are both
// coalesced. The matrices are not square, and their sides are not multiples of the tile.
//
// A plain run may even finish without an error. Run the check and read what the tool reports.
#include "cudabugs.cuh"

constexpr int TILE = 32;
constexpr int BLOCK_ROWS = 8;

__global__ void transpose_tiled(const float* in, float* out, int rows, int cols) {
  __shared__ float tile[TILE][TILE + 1];  // +1 column: the column-wise read has no bank conflicts

  // Read one tile of `in`: x walks along a row of `in` (its columns), y down its rows.
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += BLOCK_ROWS) {
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * cols + x];
  }
  __syncthreads();

  // Write it transposed: tile (bx, by) of `in` becomes tile (by, bx) of `out`, which has `cols` rows
  // of `rows` elements each.
  x = blockIdx.y * TILE + threadIdx.x;  // column of out
  y = blockIdx.x * TILE + threadIdx.y;  // row of out
  for (int j = 0; j < TILE; j += BLOCK_ROWS) {
    // ANCHOR: bug
    // A row of `out` holds `rows` elements: that, not `cols`, is its leading dimension.
    if (x < rows && y + j < cols) out[(size_t)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    // ANCHOR_END: bug
  }
}

void cb_run(cb::Io& io) {
  const int rows = static_cast<int>(io.param("rows"));
  const int cols = static_cast<int>(io.param("cols"));
  const float* h_in = io.input<float>("in");
  float* h_out = io.output<float>("out");
  const size_t bytes = static_cast<size_t>(rows) * cols * sizeof(float);

  float *d_in, *d_out;
  CB_CHECK(cudaMalloc(&d_in, bytes));
  CB_CHECK(cudaMalloc(&d_out, bytes));
  CB_CHECK(cudaMemcpy(d_in, h_in, bytes, cudaMemcpyHostToDevice));

  const dim3 block(TILE, BLOCK_ROWS);
  const dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
  transpose_tiled<<<grid, block>>>(d_in, d_out, rows, cols);
  CB_CHECK(cudaGetLastError());

  CB_CHECK(cudaMemcpy(h_out, d_out, bytes, cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_in));
  CB_CHECK(cudaFree(d_out));
}
