// ANCHOR: kernel
__global__ void transpose_half(const float* in, float* out, int rows, int cols) {
  // Another fix: no padding, a swizzle. Element [r][c] is stored at column c ^ r, so a tile column
  // (fixed c, r = lane) lands in 32 different banks. Writes use the same swizzle.
  __shared__ float tile[TILE][TILE];
  const int x = blockIdx.x * TILE + threadIdx.x;  // column read
  const int y0 = blockIdx.y * TILE;
  for (int j = threadIdx.y; j < TILE; j += ROWS_PER_PASS) {
    const int y = y0 + j;
    if (x < cols && y < rows) tile[j][threadIdx.x ^ j] = in[static_cast<size_t>(y) * cols + x];
  }
  __syncthreads();
  // Write the tile back transposed: lane threadIdx.x writes row (x0 + j), column (y0 + lane) of out,
  // reading element [lane][j] of the tile.
  const int ox = y0 + threadIdx.x;  // column of out
  const int x0 = blockIdx.x * TILE;
  for (int j = threadIdx.y; j < TILE; j += ROWS_PER_PASS) {
    const int oy = x0 + j;  // row of out
    if (ox < rows && oy < cols) out[static_cast<size_t>(oy) * rows + ox] = 0.5f * tile[threadIdx.x][j ^ threadIdx.x];
  }
}
// ANCHOR_END: kernel
