// ANCHOR: kernel
// A half-fix: 2 x 2 outputs per thread. A block of 16 x 16 threads still computes a 32 x 32 tile of
// C, now 4 elements per thread, 16 rows and 16 columns apart: C[ty][tx], C[ty][tx + 16],
// C[ty + 16][tx] and C[ty + 16][tx + 16]. For each value of k a thread loads 2 values of A and 2 of
// B from shared memory and does 4 FMAs with them: fewer loads per FMA than one element per thread,
// but shared memory still has to serve about one load for every two FMAs.
constexpr int TILE = 32, HALF = TILE / 2;

__global__ void matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ float as[TILE][TILE];  // as[r][i] = A[row0 + r][k0 + i]
  __shared__ float bs[TILE][TILE];  // bs[i][j] = B[k0 + i][col0 + j]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
  float c00 = 0.0f, c01 = 0.0f, c10 = 0.0f, c11 = 0.0f;
  for (int k0 = 0; k0 < k; k0 += TILE) {
    for (int dr = 0; dr < TILE; dr += HALF)
      for (int dc = 0; dc < TILE; dc += HALF) {
        const int r = ty + dr, j = tx + dc;
        as[r][j] = (row0 + r < m && k0 + j < k) ? a[static_cast<size_t>(row0 + r) * k + k0 + j] : 0.0f;
        bs[r][j] = (k0 + r < k && col0 + j < n) ? b[static_cast<size_t>(k0 + r) * n + col0 + j] : 0.0f;
      }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < TILE; i++) {
      const float a0 = as[ty][i], a1 = as[ty + HALF][i];
      const float b0 = bs[i][tx], b1 = bs[i][tx + HALF];
      c00 = fmaf(a0, b0, c00);
      c01 = fmaf(a0, b1, c01);
      c10 = fmaf(a1, b0, c10);
      c11 = fmaf(a1, b1, c11);
    }
    __syncthreads();
  }
  const int r0 = row0 + ty, r1 = r0 + HALF, j0 = col0 + tx, j1 = j0 + HALF;
  if (r0 < m && j0 < n) c[static_cast<size_t>(r0) * n + j0] = c00;
  if (r0 < m && j1 < n) c[static_cast<size_t>(r0) * n + j1] = c01;
  if (r1 < m && j0 < n) c[static_cast<size_t>(r1) * n + j0] = c10;
  if (r1 < m && j1 < n) c[static_cast<size_t>(r1) * n + j1] = c11;
}

void launch_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  const dim3 block(HALF, HALF), grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
  matmul<<<grid, block>>>(a, b, c, m, n, k);
}
// ANCHOR_END: kernel
