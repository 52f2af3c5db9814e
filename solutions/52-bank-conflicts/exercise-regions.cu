// 52-bank-conflicts: the marked region of the untouched exercises/52-bank-conflicts/transpose.cu: `reset` restores it, `list`
// compares against it and the book shows it.
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
