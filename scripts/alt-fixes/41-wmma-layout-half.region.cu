// ANCHOR: bug
// A half-fix: B's fragment now says col_major, but its leading dimension is still np, the length of
// a row of B as the harness holds it. Stored as B^T, B's columns lie kp apart: where kp != np every
// column after the first is read from the wrong place (and for np > kp, past the end of bt).
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
    wmma::load_matrix_sync(fb, bt + static_cast<size_t>(col0) * kp + k0, np);
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
