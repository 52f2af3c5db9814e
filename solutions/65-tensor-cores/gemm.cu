// 65-tensor-cores: C = A * B, inputs and outputs in f32, row-major: A is m x k, B is k x n, C is
// m x n.
//
// The kernel is a good SGEMM for the CUDA cores: register-blocked, free of bank conflicts, the next
// slab prefetched (the fix of 64-register-blocking). The answer is right, and the FP32 units are
// busy. It is still slow for this GPU: look at which units of the SM do the work, and which sit
// idle. The tolerance of this exercise admits products of inputs rounded to 10 mantissa bits (TF32
// or half precision) and summed in f32: the lesson says why that is safe for these values.
#include "cudabugs.cuh"

// ANCHOR: kernel
// The tensor cores, in half precision with f32 sums. Two kernels:
//  - to_half rounds A and B to half precision (10 mantissa bits, to nearest even) once, into
//    copies zero-padded to whole tiles: rows of A to a multiple of 128 and of 32 along k, B to a
//    multiple of 32 along k and of 128 along n. It reads 4 bytes and writes 2 per value, a small
//    fraction of the product's time, and the padding spares the product every edge test.
//  - matmul: a block of 256 threads (8 warps) computes a 128 x 128 tile of C, each warp a 64 x 32
//    piece of it as 4 x 2 accumulator fragments of 16 x 16 (f32, 64 registers). For every step of
//    32 along k the block copies a 128 x 32 slab of A and a 32 x 128 slab of B from the padded
//    copies into shared memory with cp.async, two buffers of each: the next slab is on its way
//    while this one is multiplied. For each 16 along k a warp loads 2 fragments of B and, one after
//    the other, 4 of A, and issues 8 tensor-core products of 16 x 16 x 16. The rows of the slabs
//    are padded by 8 halves (40 and 136) so that the fragment loads meet no bank conflict and stay
//    32-byte aligned as WMMA needs.
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
#include <mma.h>
using namespace nvcuda;

constexpr int BM = 128, BN = 128, BK = 32, THREADS = 256;
constexpr int WM = 64, WN = 32, FM = WM / 16, FN = WN / 16;  // each warp: 4 x 2 fragments
constexpr int LDA = BK + 8, LDB = BN + 8;                    // padded rows of the slabs (halves)

// y (prows x pcols, row-major, pcols a multiple of 4) = x (rows x cols) rounded to half, zeros
// past x's edges. Each thread converts 4 consecutive values: one 16-byte load where x's rows keep
// float4s aligned, one 8-byte store.
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

// C (m x n) = A * B from the padded half copies: a is (gridDim.y * BM) x kp, b is kp x np.
__global__ void __launch_bounds__(THREADS, 2)
    matmul(const __half* a, const __half* b, float* c, int m, int n, int kp, int np) {
  __shared__ __align__(128) __half as[2][BM][LDA];  // as[s][r][kk] = A[row0 + r][k0 + kk]
  __shared__ __align__(128) __half bs[2][BK][LDB];  // bs[s][kk][j] = B[k0 + kk][col0 + j]
  __shared__ __align__(128) float out[THREADS / 32][16 * 16];  // each warp's fragment on its way out
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wr = warp / (BN / WN), wc = warp % (BN / WN);  // this warp's piece: rows wr * 64, cols wc * 32
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const __half* ga = a + static_cast<size_t>(row0) * kp;
  const __half* gb = b + col0;
  // Start copying the slabs at k0 into buffer s: 512 pieces of 16 bytes (8 halves) each of A and
  // of B, 2 and 2 per thread. A piece goes from global to shared memory without a register.
  auto stage = [&](int s, int k0) {
#pragma unroll
    for (int i = 0; i < 2; i++) {
      const int e = tid + i * THREADS;
      const int ar = e / (BK / 8), ak = e % (BK / 8) * 8;
      __pipeline_memcpy_async(&as[s][ar][ak], ga + static_cast<size_t>(ar) * kp + k0 + ak, 16);
      const int bk = e / (BN / 8), bc = e % (BN / 8) * 8;
      __pipeline_memcpy_async(&bs[s][bk][bc], gb + static_cast<size_t>(k0 + bk) * np + bc, 16);
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
    // Send off the next slab (into the buffer the previous step read, which every warp has left:
    // the barrier at the end of that step), and commit a group every step, an empty one after the
    // last slab, so that "all but the newest group" is always this step's slab.
    if (t + 1 < steps) stage(s ^ 1, (t + 1) * BK);
    __pipeline_commit();
    __pipeline_wait_prior(1);
    __syncthreads();  // the wait covers this thread's copies; the barrier, everyone else's
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb[FN];
#pragma unroll
      for (int j = 0; j < FN; j++) wmma::load_matrix_sync(fb[j], &bs[s][kk][wc * WN + j * 16], LDB);
#pragma unroll
      for (int i = 0; i < FM; i++) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
        wmma::load_matrix_sync(fa, &as[s][wr * WM + i * 16][kk], LDA);
#pragma unroll
        for (int j = 0; j < FN; j++) wmma::mma_sync(acc[i][j], fa, fb[j], acc[i][j]);
      }
    }
    __syncthreads();  // every warp is done with buffer s before the next step refills it
  }
  // Out through shared memory, one fragment at a time: C's edges need not fall on whole fragments,
  // and its rows need not be aligned as a fragment store wants. Lane l writes 8 values of row l / 2.
  float* tile = out[warp];
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
  matmul<<<dim3(np / BN, mp / BM), THREADS>>>(ha, hb, c, m, n, kp, np);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaFree(ha));
  CB_CHECK(cudaFree(hb));
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
