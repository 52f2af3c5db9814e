// ANCHOR: kernel
// Another fix: 8 pixels x 8 output channels per thread, four input channels per stage. A block of
// 256 threads (32 x 8) computes a 32 wide, 64 high tile in 8 output channels; each thread a column
// of 8 pixels in all 8 channels (64 sums in registers). The block stages four input channels'
// 66 x 34 tiles and their weights at a time: two barriers per four channels. Two blocks fit on an
// SM (`__launch_bounds__(THREADS, 2)` caps the registers at 128; ptxas spills 24 bytes).
constexpr int TW = 32, TH = 64, TY = 8, PX = TH / TY, CO = 8, CI = 4, THREADS = TW * TY;
constexpr int SW = TW + 2, SH = TH + 2;

__global__ void __launch_bounds__(THREADS, 2) conv3x3(const float* x, const float* w, float* y, int cin, int cout, int height, int width) {
  __shared__ float tile[CI][SH][SW];
  __shared__ __align__(16) float ws[CI][9][CO];  // ws[k][tap][j] = w[o0 + j][i0 + k][tap]
  const int tx = threadIdx.x % TW, ty = threadIdx.x / TW;
  const int c0 = blockIdx.x * TW, r0 = blockIdx.y * TH, o0 = blockIdx.z * CO;
  const size_t plane = static_cast<size_t>(height) * width;
  float acc[PX][CO] = {};
  for (int i0 = 0; i0 < cin; i0 += CI) {
    for (int e = threadIdx.x; e < CI * SH * SW; e += THREADS) {
      const int k = e / (SH * SW), at = e % (SH * SW);
      const int rr = r0 + at / SW - 1, cc = c0 + at % SW - 1;
      const bool inside = i0 + k < cin && rr >= 0 && rr < height && cc >= 0 && cc < width;
      tile[k][at / SW][at % SW] = inside ? x[(i0 + k) * plane + static_cast<size_t>(rr) * width + cc] : 0.0f;
    }
    for (int e = threadIdx.x; e < CI * 9 * CO; e += THREADS) {
      const int k = e / (9 * CO), tap = e / CO % 9, j = e % CO;
      const bool inside = i0 + k < cin && o0 + j < cout;
      ws[k][tap][j] = inside ? w[(static_cast<size_t>(o0 + j) * cin + i0 + k) * 9 + tap] : 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < CI; k++) {
#pragma unroll
      for (int dc = 0; dc < 3; dc++) {
        float col[PX + 2];
#pragma unroll
        for (int q = 0; q < PX + 2; q++) col[q] = tile[k][ty * PX + q][tx + dc];
#pragma unroll
        for (int dr = 0; dr < 3; dr++) {
          const float4 a = reinterpret_cast<const float4*>(ws[k][dr * 3 + dc])[0];
          const float4 b = reinterpret_cast<const float4*>(ws[k][dr * 3 + dc])[1];
          const float wv[CO] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
          for (int p = 0; p < PX; p++)
#pragma unroll
            for (int j = 0; j < CO; j++) acc[p][j] = fmaf(col[p + dr], wv[j], acc[p][j]);
        }
      }
    }
    __syncthreads();  // the next stage overwrites tile and ws
  }
  const int c = c0 + tx;
  if (c >= width) return;
#pragma unroll
  for (int p = 0; p < PX; p++) {
    const int r = r0 + ty * PX + p;
    if (r >= height) break;
#pragma unroll
    for (int j = 0; j < CO; j++)
      if (o0 + j < cout) y[(o0 + j) * plane + static_cast<size_t>(r) * width + c] = acc[p][j];
  }
}

void launch_conv(const float* x, const float* w, float* y, int cin, int cout, int height, int width) {
  if (cout == 0 || height == 0 || width == 0) return;
  const dim3 grid((width + TW - 1) / TW, (height + TH - 1) / TH, (cout + CO - 1) / CO);
  conv3x3<<<grid, THREADS>>>(x, w, y, cin, cout, height, width);
}
// ANCHOR_END: kernel
