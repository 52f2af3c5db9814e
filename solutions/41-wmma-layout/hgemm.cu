// 41-wmma-layout: C = A * B on the tensor cores, half-precision inputs, f32 sums. A is m x k, B is
// k x n and C is m x n, in f32 and row-major in the harness's buffers.
//
// A first kernel rounds A and B to half precision (to nearest) into device buffers whose sides are
// padded with zeros to multiples of 16, the tensor cores' tile: any m, n and k work, and the zeros
// add nothing to the sums. B goes in transposed, as B^T: column-major, so each column of B, what
// one column of C needs along k, lies contiguous (cuBLAS's "NT" layout). Then each warp computes
// one 16 x 16 tile of C with the WMMA API: for every 16 steps along k it loads a 16 x 16 fragment of
// A and one of B, and the tensor cores multiply them and add the products to f32 accumulators.
// Run it plainly and compare the outputs with the reference. Run the check and see what the tools
// say.
#include <cuda_fp16.h>
#include <mma.h>
#include "cudabugs.cuh"

using namespace nvcuda;

constexpr int TILE = 16;  // WMMA's 16 x 16 x 16 shape for half-precision inputs
constexpr int WARPS_PER_BLOCK = 4;

int round_up(int x) { return (x + TILE - 1) / TILE * TILE; }

// dst (rows_p x cols_p, row-major, half) = src rounded to half, zeros past src's edges. src is f32
// and row-major, src_rows x src_cols; with `transpose` dst holds its transpose (element (r, c) of dst
// is src's (c, r)).
__global__ void to_half(const float* src, int src_rows, int src_cols, __half* dst, int rows_p,
                        int cols_p, bool transpose) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r >= rows_p || c >= cols_p) return;
  const int sr = transpose ? c : r, sc = transpose ? r : c;
  const float v = (sr < src_rows && sc < src_cols) ? src[static_cast<size_t>(sr) * src_cols + sc] : 0.0f;
  dst[static_cast<size_t>(r) * cols_p + c] = __float2half_rn(v);
}

void convert(const float* src, int src_rows, int src_cols, __half* dst, int rows_p, int cols_p, bool transpose) {
  const dim3 block(32, 8), grid((cols_p + 31) / 32, (rows_p + 7) / 8);
  to_half<<<grid, block>>>(src, src_rows, src_cols, dst, rows_p, cols_p, transpose);
}

// ANCHOR: bug
// One warp per 16 x 16 tile of C (cp: mp x np, row-major). A is stored row-major (ah: mp x kp); B is
// stored column-major, as B^T (bt: np x kp, row-major), so the 16 x 16 tile of B at (k0, col0)
// starts at bt + col0 * kp + k0 and its columns lie kp apart.
__global__ void wmma_matmul(const __half* ah, const __half* bt, float* cp, int mp, int np, int kp) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int tiles_n = np / TILE;
  if (warp >= (mp / TILE) * tiles_n) return;  // whole warps only: the WMMA calls are warp-wide
  const int row0 = warp / tiles_n * TILE, col0 = warp % tiles_n * TILE;
  wmma::fragment<wmma::matrix_a, TILE, TILE, TILE, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, TILE, TILE, TILE, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, TILE, TILE, TILE, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k0 = 0; k0 < kp; k0 += TILE) {
    wmma::load_matrix_sync(fa, ah + static_cast<size_t>(row0) * kp + k0, kp);
    wmma::load_matrix_sync(fb, bt + static_cast<size_t>(col0) * kp + k0, kp);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(cp + static_cast<size_t>(row0) * np + col0, acc, np, wmma::mem_row_major);
}

// Round A and B to half precision, padded (B transposed), then one warp per tile of C.
void launch_matmul(const float* a, const float* b, __half* ah, __half* bh, float* cp, int m, int n, int k) {
  const int mp = round_up(m), np = round_up(n), kp = round_up(k);
  convert(a, m, k, ah, mp, kp, false);  // A:   mp x kp
  convert(b, k, n, bh, np, kp, true);   // B^T: np x kp
  const int warps = (mp / TILE) * (np / TILE);
  wmma_matmul<<<(warps + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK, WARPS_PER_BLOCK * 32>>>(ah, bh, cp, mp, np, kp);
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int m = static_cast<int>(io.param("m"));
  const int n = static_cast<int>(io.param("n"));
  const int k = static_cast<int>(io.param("k"));
  const int mp = round_up(m), np = round_up(n), kp = round_up(k);
  const size_t la = static_cast<size_t>(m) * k, lb = static_cast<size_t>(k) * n;
  float *d_a, *d_b, *d_cp;
  __half *d_ah, *d_bh;
  CB_CHECK(cudaMalloc(&d_a, la * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_b, lb * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_ah, static_cast<size_t>(mp) * kp * sizeof(__half)));
  CB_CHECK(cudaMalloc(&d_bh, static_cast<size_t>(kp) * np * sizeof(__half)));
  CB_CHECK(cudaMalloc(&d_cp, static_cast<size_t>(mp) * np * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_a, io.input<float>("a"), la * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemcpy(d_b, io.input<float>("b"), lb * sizeof(float), cudaMemcpyHostToDevice));
  launch_matmul(d_a, d_b, d_ah, d_bh, d_cp, m, n, k);
  CB_CHECK(cudaGetLastError());
  // The first n columns of the first m rows of the padded C: the harness's m x n.
  CB_CHECK(cudaMemcpy2D(io.output<float>("c"), n * sizeof(float), d_cp, np * sizeof(float), n * sizeof(float), m,
                        cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_a));
  CB_CHECK(cudaFree(d_b));
  CB_CHECK(cudaFree(d_ah));
  CB_CHECK(cudaFree(d_bh));
  CB_CHECK(cudaFree(d_cp));
}
