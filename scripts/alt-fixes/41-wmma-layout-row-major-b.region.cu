// ANCHOR: bug
// Another fix: keep B row-major. The conversion stores B as it is (bh: kp x np, row-major), so the
// 16 x 16 tile of B at (k0, col0) starts at bh + k0 * np + col0, its rows np apart, and the
// fragment that loads it says row_major, like A's.
__global__ void wmma_matmul(const __half* ah, const __half* bh, float* cp, int mp, int np, int kp) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int tiles_n = np / TILE;
  if (warp >= (mp / TILE) * tiles_n) return;  // whole warps only: the WMMA calls are warp-wide
  const int row0 = warp / tiles_n * TILE, col0 = warp % tiles_n * TILE;
  wmma::fragment<wmma::matrix_a, TILE, TILE, TILE, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, TILE, TILE, TILE, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, TILE, TILE, TILE, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k0 = 0; k0 < kp; k0 += TILE) {
    wmma::load_matrix_sync(fa, ah + static_cast<size_t>(row0) * kp + k0, kp);
    wmma::load_matrix_sync(fb, bh + static_cast<size_t>(k0) * np + col0, np);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(cp + static_cast<size_t>(row0) * np + col0, acc, np, wmma::mem_row_major);
}

// Round A and B to half precision, padded, both row-major, then one warp per tile of C.
void launch_matmul(const float* a, const float* b, __half* ah, __half* bh, float* cp, int m, int n, int k) {
  const int mp = round_up(m), np = round_up(n), kp = round_up(k);
  convert(a, m, k, ah, mp, kp, false);  // A: mp x kp
  convert(b, k, n, bh, kp, np, false);  // B: kp x np
  const int warps = (mp / TILE) * (np / TILE);
  wmma_matmul<<<(warps + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK, WARPS_PER_BLOCK * 32>>>(ah, bh, cp, mp, np, kp);
}
// ANCHOR_END: bug
