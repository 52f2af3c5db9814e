// ANCHOR: kernel
// A half-fix: the textbook tiled convolution. For each input channel a 16 x 16 block stages its
// 18 x 18 input tile (halo included) and the channel's 9 weights in shared memory, then each
// thread computes its one output from there. Every value is loaded from DRAM once, but each
// multiply-add still needs two loads (now from shared memory), and two barriers come every 9 FMAs.
constexpr int T = 16, S = T + 2;

__global__ void conv3x3(const float* x, const float* w, float* y, int cin, int cout, int height, int width) {
  __shared__ float tile[S][S];
  __shared__ float ws[9];
  const int tx = threadIdx.x, ty = threadIdx.y, t = ty * T + tx;
  const int c0 = blockIdx.x * T, r0 = blockIdx.y * T, o = blockIdx.z;
  const size_t plane = static_cast<size_t>(height) * width;
  float acc = 0.0f;
  for (int i = 0; i < cin; i++) {
    const float* xi = x + i * plane;
    for (int e = t; e < S * S; e += T * T) {
      const int rr = r0 + e / S - 1, cc = c0 + e % S - 1;
      const bool inside = rr >= 0 && rr < height && cc >= 0 && cc < width;
      tile[e / S][e % S] = inside ? xi[static_cast<size_t>(rr) * width + cc] : 0.0f;
    }
    if (t < 9) ws[t] = w[(static_cast<size_t>(o) * cin + i) * 9 + t];
    __syncthreads();
    for (int dr = 0; dr < 3; dr++)
      for (int dc = 0; dc < 3; dc++) acc += tile[ty + dr][tx + dc] * ws[dr * 3 + dc];
    __syncthreads();
  }
  const int r = r0 + ty, c = c0 + tx;
  if (r < height && c < width) y[o * plane + static_cast<size_t>(r) * width + c] = acc;
}

void launch_conv(const float* x, const float* w, float* y, int cin, int cout, int height, int width) {
  if (cout == 0 || height == 0 || width == 0) return;
  const dim3 block(T, T), grid((width + T - 1) / T, (height + T - 1) / T, cout);
  conv3x3<<<grid, block>>>(x, w, y, cin, cout, height, width);
}
// ANCHOR_END: kernel
