// ANCHOR: kernel
// Another fix: smaller register tiles. A block of 256 threads computes a 64 x 64 tile of C, each
// thread a 4 x 4 piece; the k-slabs are 16 deep. Fewer registers per thread, more blocks per SM.
constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4, THREADS = 256;

__global__ void __launch_bounds__(THREADS) matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ __align__(16) float as[BK][BM];
  __shared__ __align__(16) float bs[BK][BN];
  const int tid = threadIdx.x;
  const int tr = tid / (BN / TN), tc = tid % (BN / TN);
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < k; k0 += BK) {
    for (int e = tid; e < BM * BK; e += THREADS) {
      const int r = e / BK, kk = e % BK, gr = row0 + r, gk = k0 + kk;
      as[kk][r] = (gr < m && gk < k) ? a[static_cast<size_t>(gr) * k + gk] : 0.0f;
    }
    for (int e = tid; e < BK * BN; e += THREADS) {
      const int kk = e / BN, j = e % BN, gk = k0 + kk, gc = col0 + j;
      bs[kk][j] = (gk < k && gc < n) ? b[static_cast<size_t>(gk) * n + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk++) {
      const float4 ra = *reinterpret_cast<const float4*>(&as[kk][tr * TM]);
      const float4 rb = *reinterpret_cast<const float4*>(&bs[kk][tc * TN]);
      const float va[4] = {ra.x, ra.y, ra.z, ra.w}, vb[4] = {rb.x, rb.y, rb.z, rb.w};
#pragma unroll
      for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = fmaf(va[i], vb[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < TM; i++)
    for (int j = 0; j < TN; j++) {
      const int r = row0 + tr * TM + i, col = col0 + tc * TN + j;
      if (r < m && col < n) c[static_cast<size_t>(r) * n + col] = acc[i][j];
    }
}

void launch_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
  matmul<<<grid, THREADS>>>(a, b, c, m, n, k);
}
// ANCHOR_END: kernel
