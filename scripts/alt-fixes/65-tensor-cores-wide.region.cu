// ANCHOR: kernel
// Another fix: the same two kernels with wider tiles. to_half as in the fix (half-precision copies
// zero-padded to whole tiles); matmul with a 128 x 256 tile of C per block of 8 warps, each warp a
// 64 x 64 piece of it as 4 x 4 accumulator fragments (128 registers of f32 sums). A warp now loads
// 4 fragments of A and 4 of B for 16 products, against 4 and 2 for 8 in the fix: a third fewer
// shared-memory reads per tensor-core instruction. The price: about 200 registers a thread, so one
// block per SM, and 53 KiB of slabs (two buffers), past the 48 KiB a block gets without asking:
// the shared memory is dynamic, raised with cudaFuncSetAttribute.
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
#include <mma.h>
using namespace nvcuda;

constexpr int BM = 128, BN = 256, BK = 32, THREADS = 256;
constexpr int WM = 64, WN = 64, FM = WM / 16, FN = WN / 16;  // each warp: 4 x 4 fragments
constexpr int LDA = BK + 8, LDB = BN + 8;                    // padded rows of the slabs (halves)
constexpr int A_SLAB = BM * LDA, B_SLAB = BK * LDB;          // halves per buffer
constexpr size_t SMEM = (2 * A_SLAB + 2 * B_SLAB) * sizeof(__half) + THREADS / 32 * 256 * sizeof(float);

// y (prows x pcols, row-major, pcols a multiple of 4) = x (rows x cols) rounded to half, zeros
// past x's edges. Each thread converts 4 consecutive values.
__global__ void to_half(const float* x, int rows, int cols, __half* y, int prows, int pcols) {
  const size_t g = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= static_cast<size_t>(prows) * (pcols / 4)) return;
  const int r = static_cast<int>(g / (pcols / 4)), c = static_cast<int>(g % (pcols / 4)) * 4;
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (r < rows && c < cols) {
    const float* p = x + static_cast<size_t>(r) * cols + c;
    if (cols % 4 == 0) {
      v = *reinterpret_cast<const float4*>(p);
    } else {
      v.x = p[0];
      if (c + 1 < cols) v.y = p[1];
      if (c + 2 < cols) v.z = p[2];
      if (c + 3 < cols) v.w = p[3];
    }
  }
  __half2* q = reinterpret_cast<__half2*>(y + static_cast<size_t>(r) * pcols + c);
  q[0] = __floats2half2_rn(v.x, v.y);
  q[1] = __floats2half2_rn(v.z, v.w);
}

__global__ void __launch_bounds__(THREADS, 1)
    matmul(const __half* a, const __half* b, float* c, int m, int n, int kp, int np) {
  extern __shared__ __align__(128) unsigned char smem[];
  __half* as = reinterpret_cast<__half*>(smem);  // 2 buffers of BM x LDA: A[row0 + r][k0 + kk]
  __half* bs = as + 2 * A_SLAB;                  // 2 buffers of BK x LDB: B[k0 + kk][col0 + j]
  float* out = reinterpret_cast<float*>(bs + 2 * B_SLAB);  // each warp's fragment on its way out
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wr = warp / (BN / WN), wc = warp % (BN / WN);  // rows wr * 64, cols wc * 64
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const __half* ga = a + static_cast<size_t>(row0) * kp;
  const __half* gb = b + col0;
  // Slabs at k0 into buffer s: 512 pieces of 16 bytes of A (2 per thread), 1024 of B (4).
  auto stage = [&](int s, int k0) {
#pragma unroll
    for (int i = 0; i < 2; i++) {
      const int e = tid + i * THREADS, r = e / (BK / 8), q = e % (BK / 8) * 8;
      __pipeline_memcpy_async(as + s * A_SLAB + r * LDA + q, ga + static_cast<size_t>(r) * kp + k0 + q, 16);
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const int e = tid + i * THREADS, r = e / (BN / 8), q = e % (BN / 8) * 8;
      __pipeline_memcpy_async(bs + s * B_SLAB + r * LDB + q, gb + static_cast<size_t>(k0 + r) * np + q, 16);
    }
  };
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; i++)
#pragma unroll
    for (int j = 0; j < FN; j++) wmma::fill_fragment(acc[i][j], 0.0f);
  const int steps = kp / BK;
  stage(0, 0);
  __pipeline_commit();
  for (int t = 0; t < steps; t++) {
    const int s = t % 2;
    if (t + 1 < steps) stage(s ^ 1, (t + 1) * BK);
    __pipeline_commit();  // an empty group after the last slab: "all but the newest" is slab t
    __pipeline_wait_prior(1);
    __syncthreads();
    const __half* sa = as + s * A_SLAB;
    const __half* sb = bs + s * B_SLAB;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb[FN];
#pragma unroll
      for (int j = 0; j < FN; j++) wmma::load_matrix_sync(fb[j], sb + kk * LDB + wc * WN + j * 16, LDB);
#pragma unroll
      for (int i = 0; i < FM; i++) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
        wmma::load_matrix_sync(fa, sa + (wr * WM + i * 16) * LDA + kk, LDA);
#pragma unroll
        for (int j = 0; j < FN; j++) wmma::mma_sync(acc[i][j], fa, fb[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
  // Out through each warp's 16 x 16 scratch tile, as in the fix.
  float* tile = out + warp * 256;
#pragma unroll
  for (int i = 0; i < FM; i++)
#pragma unroll
    for (int j = 0; j < FN; j++) {
      wmma::store_matrix_sync(tile, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      const int r = row0 + wr * WM + i * 16 + lane / 2, col = col0 + wc * WN + j * 16 + lane % 2 * 8;
      const float* v = tile + lane / 2 * 16 + lane % 2 * 8;
      if (r < m) {
        float* p = c + static_cast<size_t>(r) * n + col;
        if (n % 4 == 0 && col + 7 < n) {
          *reinterpret_cast<float4*>(p) = *reinterpret_cast<const float4*>(v);
          *reinterpret_cast<float4*>(p + 4) = *reinterpret_cast<const float4*>(v + 4);
        } else {
          for (int t = 0; t < 8; t++)
            if (col + t < n) p[t] = v[t];
        }
      }
      __syncwarp();
    }
}

void launch_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  const int mp = (m + BM - 1) / BM * BM, np = (n + BN - 1) / BN * BN, kp = (k + BK - 1) / BK * BK;
  __half *ha, *hb;
  CB_CHECK(cudaMalloc(&ha, static_cast<size_t>(mp) * kp * sizeof(__half)));
  CB_CHECK(cudaMalloc(&hb, static_cast<size_t>(kp) * np * sizeof(__half)));
  const auto blocks = [](int rows, int cols) {
    return static_cast<unsigned>((static_cast<size_t>(rows) * (cols / 4) + 255) / 256);
  };
  to_half<<<blocks(mp, kp), 256>>>(a, m, k, ha, mp, kp);
  to_half<<<blocks(kp, np), 256>>>(b, k, n, hb, kp, np);
  CB_CHECK(cudaFuncSetAttribute(matmul, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(SMEM)));
  matmul<<<dim3(np / BN, mp / BM), THREADS, SMEM>>>(ha, hb, c, m, n, kp, np);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaFree(ha));
  CB_CHECK(cudaFree(hb));
}
// ANCHOR_END: kernel
