// ANCHOR: kernel
// A half-fix: the tensor cores in half precision, each warp on its own. to_half as in the fix
// (copies padded to multiples of 16 here); then every warp computes one 16 x 16 tile of C, loading
// its fragments of A and B for each 16 along k straight from the half-precision copies in global
// memory. Correct, and the tensor cores do the arithmetic, but no value is staged or shared: for
// every tensor-core product (2 instructions) a warp loads 1 KiB of fragments through L1 and L2,
// and waits for it.
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;

constexpr int WARPS = 8, THREADS = WARPS * 32;

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

// a is mp x kp, b is kp x np (multiples of 16, zero-padded).
__global__ void __launch_bounds__(THREADS) matmul(const __half* a, const __half* b, float* c, int m, int n, int kp, int np) {
  __shared__ __align__(128) float out[WARPS][16 * 16];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int tiles_n = np / 16;
  const int tile = blockIdx.x * WARPS + warp;
  if (tile >= tiles_n * ((m + 15) / 16)) return;  // whole warps only: the WMMA calls are warp-wide
  const int row0 = tile / tiles_n * 16, col0 = tile % tiles_n * 16;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k0 = 0; k0 < kp; k0 += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
    wmma::load_matrix_sync(fa, a + static_cast<size_t>(row0) * kp + k0, kp);
    wmma::load_matrix_sync(fb, b + static_cast<size_t>(k0) * np + col0, np);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(out[warp], acc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int e = lane; e < 256; e += 32) {
    const int r = row0 + e / 16, col = col0 + e % 16;
    if (r < m && col < n) c[static_cast<size_t>(r) * n + col] = out[warp][e];
  }
}

void launch_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  const int mp = (m + 15) / 16 * 16, np = (n + 15) / 16 * 16, kp = (k + 15) / 16 * 16;
  __half *ha, *hb;
  CB_CHECK(cudaMalloc(&ha, static_cast<size_t>(mp) * kp * sizeof(__half)));
  CB_CHECK(cudaMalloc(&hb, static_cast<size_t>(kp) * np * sizeof(__half)));
  const auto blocks = [](int rows, int cols) {
    return static_cast<unsigned>((static_cast<size_t>(rows) * (cols / 4) + 255) / 256);
  };
  to_half<<<blocks(mp, kp), 256>>>(a, m, k, ha, mp, kp);
  to_half<<<blocks(kp, np), 256>>>(b, k, n, hb, kp, np);
  const int tiles = (mp / 16) * (np / 16);
  matmul<<<(tiles + WARPS - 1) / WARPS, THREADS>>>(ha, hb, c, m, n, kp, np);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaFree(ha));
  CB_CHECK(cudaFree(hb));
}
// ANCHOR_END: kernel
