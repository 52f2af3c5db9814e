// 64-register-blocking: the marked region of the untouched exercises/64-register-blocking/sgemm.cu: `reset`
// restores it, `list` compares against it and the book shows it.
// ANCHOR: kernel
// Shared-memory tiling, the textbook way. A block of 32 x 32 threads computes a 32 x 32 tile of C,
// one element per thread. For every step of 32 along k the block stages a 32 x 32 tile of A and one
// of B in shared memory, so each value comes from global memory once per block instead of once per
// thread; then each thread runs its dot product over the two tiles.
constexpr int TILE = 32;

__global__ void matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ float as[TILE][TILE];  // as[ty][i] = A[row][k0 + i]
  __shared__ float bs[TILE][TILE];  // bs[i][tx] = B[k0 + i][col]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += TILE) {
    as[ty][tx] = (row < m && k0 + tx < k) ? a[static_cast<size_t>(row) * k + k0 + tx] : 0.0f;
    bs[ty][tx] = (k0 + ty < k && col < n) ? b[static_cast<size_t>(k0 + ty) * n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < TILE; i++) acc = fmaf(as[ty][i], bs[i][tx], acc);
    __syncthreads();
  }
  if (row < m && col < n) c[static_cast<size_t>(row) * n + col] = acc;
}

void launch_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  const dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
  matmul<<<grid, block>>>(a, b, c, m, n, k);
}
// ANCHOR_END: kernel
