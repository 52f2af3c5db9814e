// ANCHOR: kernel
// Another fix: register blocking without the refinements. A block of 256 threads computes a
// 128 x 128 tile of C, each thread a contiguous 8 x 8 piece of it in 64 registers; per step of 8
// along k the block stages the slabs of A (transposed) and B with scalar loads, then each thread
// loads 8 values of A and 8 of B into registers and does 64 FMAs with them. One buffer per slab
// (two barriers a step), no prefetch, and the float4 loads of B meet 2-way bank conflicts.
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8, THREADS = 256;

__global__ void __launch_bounds__(THREADS) matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ __align__(16) float as[BK][BM];  // as[kk][r] = A[row0 + r][k0 + kk]
  __shared__ __align__(16) float bs[BK][BN];  // bs[kk][j] = B[k0 + kk][col0 + j]
  const int tid = threadIdx.x;
  const int tr = tid / (BN / TN), tc = tid % (BN / TN);
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < k; k0 += BK) {
#pragma unroll
    for (int i = 0; i < BM * BK / THREADS; i++) {
      const int e = tid + i * THREADS, r = e / BK, kk = e % BK, gr = row0 + r, gk = k0 + kk;
      as[kk][r] = (gr < m && gk < k) ? a[static_cast<size_t>(gr) * k + gk] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < BK * BN / THREADS; i++) {
      const int e = tid + i * THREADS, kk = e / BN, j = e % BN, gk = k0 + kk, gc = col0 + j;
      bs[kk][j] = (gk < k && gc < n) ? b[static_cast<size_t>(gk) * n + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk++) {
      float ra[TM], rb[TN];
#pragma unroll
      for (int i = 0; i < TM; i += 4) *reinterpret_cast<float4*>(&ra[i]) = *reinterpret_cast<const float4*>(&as[kk][tr * TM + i]);
#pragma unroll
      for (int j = 0; j < TN; j += 4) *reinterpret_cast<float4*>(&rb[j]) = *reinterpret_cast<const float4*>(&bs[kk][tc * TN + j]);
#pragma unroll
      for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; i++) {
    const int r = row0 + tr * TM + i;
#pragma unroll
    for (int j = 0; j < TN; j++) {
      const int col = col0 + tc * TN + j;
      if (r < m && col < n) c[static_cast<size_t>(r) * n + col] = acc[i][j];
    }
  }
}

void launch_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
  matmul<<<grid, THREADS>>>(a, b, c, m, n, k);
}
// ANCHOR_END: kernel
