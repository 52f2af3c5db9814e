// 54-matmul: C = A * B in fp32, row-major: A is m x k, B is k x n, C is m x n.
//
// The answer is right. It is slow: count how many times each value of A and B is loaded, and
// where from, for every multiply-add.
#include "cudabugs.cuh"

// ANCHOR: kernel
// Register tiling. A block of 256 threads computes a 128 x 128 tile of C; each thread an 8 x 8
// piece of it, kept in 64 registers. For every step of 8 along k, the block stages a 128 x 8 slab
// of A (stored transposed) and an 8 x 128 slab of B in shared memory; then each thread loads 8
// values of A and 8 of B into registers and does 64 multiply-adds with them: 16 loads from shared
// memory per 64 FMAs, instead of 2 loads from global memory per FMA.
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8, THREADS = 256;

__global__ void __launch_bounds__(THREADS) matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ __align__(16) float as[BK][BM];  // as[kk][r] = A[row0 + r][k0 + kk]
  __shared__ __align__(16) float bs[BK][BN];  // bs[kk][j] = B[k0 + kk][col0 + j]
  const int tid = threadIdx.x;
  const int tr = tid / (BN / TN), tc = tid % (BN / TN);  // this thread's 8 x 8 piece
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < k; k0 += BK) {
    // Stage the slabs: 1024 elements each, 4 per thread, zeros past the edges of A and B.
#pragma unroll
    for (int i = 0; i < BM * BK / THREADS; i++) {
      const int e = tid + i * THREADS;
      const int r = e / BK, kk = e % BK;
      const int gr = row0 + r, gk = k0 + kk;
      as[kk][r] = (gr < m && gk < k) ? a[static_cast<size_t>(gr) * k + gk] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < BK * BN / THREADS; i++) {
      const int e = tid + i * THREADS;
      const int kk = e / BN, j = e % BN;
      const int gk = k0 + kk, gc = col0 + j;
      bs[kk][j] = (gk < k && gc < n) ? b[static_cast<size_t>(gk) * n + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk++) {
      float ra[TM], rb[TN];
      const float4* pa = reinterpret_cast<const float4*>(&as[kk][tr * TM]);
      const float4* pb = reinterpret_cast<const float4*>(&bs[kk][tc * TN]);
      *reinterpret_cast<float4*>(&ra[0]) = pa[0];
      *reinterpret_cast<float4*>(&ra[4]) = pa[1];
      *reinterpret_cast<float4*>(&rb[0]) = pb[0];
      *reinterpret_cast<float4*>(&rb[4]) = pb[1];
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
    if (r >= m) break;
#pragma unroll
    for (int j = 0; j < TN; j++) {
      const int col = col0 + tc * TN + j;
      if (col < n) c[static_cast<size_t>(r) * n + col] = acc[i][j];
    }
  }
}

void launch_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
  matmul<<<grid, THREADS>>>(a, b, c, m, n, k);
}
// ANCHOR_END: kernel

void cb_run(cb::Io& io) {
  const int m = static_cast<int>(io.param("m"));
  const int n = static_cast<int>(io.param("n"));
  const int k = static_cast<int>(io.param("k"));
  const size_t la = static_cast<size_t>(m) * k, lb = static_cast<size_t>(k) * n, lc = static_cast<size_t>(m) * n;
  float *d_a, *d_b, *d_c;
  CB_CHECK(cudaMalloc(&d_a, la * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_b, lb * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_c, lc * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_a, io.input<float>("a"), la * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemcpy(d_b, io.input<float>("b"), lb * sizeof(float), cudaMemcpyHostToDevice));
  launch_matmul(d_a, d_b, d_c, m, n, k);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(io.output<float>("c"), d_c, lc * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_a));
  CB_CHECK(cudaFree(d_b));
  CB_CHECK(cudaFree(d_c));
}
