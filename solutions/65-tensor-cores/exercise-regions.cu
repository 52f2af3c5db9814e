// 65-tensor-cores: the marked region of the untouched exercises/65-tensor-cores/gemm.cu: `reset`
// restores it, `list` compares against it and the book shows it.
// ANCHOR: kernel
// Register-blocked SGEMM on the CUDA cores. A block of 256 threads computes a 128 x 128 tile of C,
// each thread 64 elements of it in registers (rows 4 tr .. 4 tr + 3 and 64 + 4 tr .. 64 + 4 tr + 3
// of the tile, columns likewise with tc; tr, tc = thread / 16, thread % 16). For every step of 8
// along k the block stages a 128 x 8 slab of A (transposed) and an 8 x 128 slab of B in shared
// memory, two buffers of each so that the next slab loads while this one is multiplied; for each k
// a thread loads 8 values of A and 8 of B as float4s and does 64 FMAs.
constexpr int BM = 128, BN = 128, BK = 8, THREADS = 256;

// Four consecutive floats of a row-major matrix with `cols` columns, from (r, c); zeros past its
// edges. One 16-byte load where rows keep float4s aligned (cols % 4 == 0, c % 4 == 0).
__device__ __forceinline__ float4 load4(const float* x, int rows, int cols, int r, int c) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (r >= rows || c >= cols) return v;
  const float* p = x + static_cast<size_t>(r) * cols + c;
  if (cols % 4 == 0) return *reinterpret_cast<const float4*>(p);
  v.x = p[0];
  if (c + 1 < cols) v.y = p[1];
  if (c + 2 < cols) v.z = p[2];
  if (c + 3 < cols) v.w = p[3];
  return v;
}

__global__ void __launch_bounds__(THREADS, 2) matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ __align__(16) float as[2][BK][BM + 4];  // as[s][kk][r] = A[row0 + r][k0 + kk]
  __shared__ __align__(16) float bs[2][BK][BN];      // bs[s][kk][j] = B[k0 + kk][col0 + j]
  const int tid = threadIdx.x, tr = tid / 16, tc = tid % 16;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  // What this thread stages of every slab: 4 values along k of one row of A, 4 of one row of B.
  const int ar = tid / 2, ak = tid % 2 * 4, bk = tid / 32, bc = tid % 32 * 4;
  float acc[8][8] = {};
  float4 na = load4(a, m, k, row0 + ar, ak), nb = load4(b, k, n, bk, col0 + bc);
  int s = 0;
  for (int k0 = 0; k0 < k; k0 += BK, s ^= 1) {
    // Store the slab loaded during the previous step. Its buffer was last read two steps ago,
    // before the barrier of the previous step, so one barrier per step is enough.
    as[s][ak + 0][ar] = na.x;
    as[s][ak + 1][ar] = na.y;
    as[s][ak + 2][ar] = na.z;
    as[s][ak + 3][ar] = na.w;
    *reinterpret_cast<float4*>(&bs[s][bk][bc]) = nb;
    __syncthreads();
    // Start loading the next slab; the 512 FMAs below hide the wait.
    if (k0 + BK < k) {
      na = load4(a, m, k, row0 + ar, k0 + BK + ak);
      nb = load4(b, k, n, k0 + BK + bk, col0 + bc);
    }
#pragma unroll
    for (int kk = 0; kk < BK; kk++) {
      const float4 a0 = *reinterpret_cast<const float4*>(&as[s][kk][tr * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&as[s][kk][64 + tr * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&bs[s][kk][tc * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&bs[s][kk][64 + tc * 4]);
      const float ra[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float rb[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
  }
  // acc[i][j] is C[row0 + rows[i]][col0 + cols[j]], rows = {4 tr .. 4 tr + 3, 64 + 4 tr .. 64 + 4 tr + 3}.
#pragma unroll
  for (int i = 0; i < 8; i++) {
    const int r = row0 + (i < 4 ? tr * 4 + i : 64 + tr * 4 + i - 4);
    if (r >= m) continue;
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int col = col0 + h * 64 + tc * 4;
      float* p = c + static_cast<size_t>(r) * n + col;
      if (n % 4 == 0 && col < n) {
        *reinterpret_cast<float4*>(p) = make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; j++)
          if (col + j < n) p[j] = acc[i][h * 4 + j];
      }
    }
  }
}

void launch_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
  matmul<<<grid, THREADS>>>(a, b, c, m, n, k);
}
// ANCHOR_END: kernel
