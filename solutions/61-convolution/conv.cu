// 61-convolution: a 3 x 3 convolution layer, as the first layers of an image network run it. The
// input is an image of `cin` channels (each height x width, row-major, one channel after another),
// the weights are `cout` filters of cin x 3 x 3, the padding is zeros and the stride 1:
//   y[o][r][c] = sum over i, dr, dc of w[o][i][dr][dc] * x[i][r + dr - 1][c + dc - 1].
//
// The answer is right (to float rounding). It is slow: count the loads for every multiply-add, and
// how many times each input value and each weight is loaded over the whole layer.
#include "cudabugs.cuh"

// ANCHOR: kernel
// Register tiling. A block of 256 threads (32 x 8) computes a 32 x 32 tile of the image in 16
// output channels; each thread 4 pixels of one column (rows 4 ty ... 4 ty + 3) in all 16 channels:
// 64 sums in registers. For each input channel the block stages the 34 x 34 input tile (the halo
// included, zeros outside the image) and the channel's 9 x 16 weights in shared memory. Then, for
// each column of the 3 x 3 window, a thread loads 6 input values, and for each row 16 weights (four
// float4 broadcasts), and does 4 x 16 = 64 multiply-adds with them: 54 shared loads for 576 FMAs
// per input channel, instead of 2 global loads per FMA.
constexpr int TW = 32, TH = 32, TY = 8, PX = TH / TY, CO = 16, THREADS = TW * TY;
constexpr int SW = TW + 2, SH = TH + 2;

__global__ void __launch_bounds__(THREADS) conv3x3(const float* x, const float* w, float* y, int cin, int cout, int height, int width) {
  __shared__ float tile[SH][SW];
  __shared__ __align__(16) float ws[9][CO];  // ws[tap][j] = w[o0 + j][i][tap]
  const int tx = threadIdx.x % TW, ty = threadIdx.x / TW;
  const int c0 = blockIdx.x * TW, r0 = blockIdx.y * TH, o0 = blockIdx.z * CO;
  const size_t plane = static_cast<size_t>(height) * width;
  float acc[PX][CO] = {};
  for (int i = 0; i < cin; i++) {
    const float* xi = x + i * plane;
    for (int e = threadIdx.x; e < SH * SW; e += THREADS) {
      const int rr = r0 + e / SW - 1, cc = c0 + e % SW - 1;
      const bool inside = rr >= 0 && rr < height && cc >= 0 && cc < width;
      tile[e / SW][e % SW] = inside ? xi[static_cast<size_t>(rr) * width + cc] : 0.0f;
    }
    if (threadIdx.x < 9 * CO) {
      const int tap = threadIdx.x / CO, j = threadIdx.x % CO;
      ws[tap][j] = o0 + j < cout ? w[(static_cast<size_t>(o0 + j) * cin + i) * 9 + tap] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int dc = 0; dc < 3; dc++) {
      float col[PX + 2];
#pragma unroll
      for (int k = 0; k < PX + 2; k++) col[k] = tile[ty * PX + k][tx + dc];
#pragma unroll
      for (int dr = 0; dr < 3; dr++) {
        float wv[CO];
#pragma unroll
        for (int q = 0; q < CO / 4; q++) {
          const float4 v = reinterpret_cast<const float4*>(ws[dr * 3 + dc])[q];
          wv[4 * q] = v.x, wv[4 * q + 1] = v.y, wv[4 * q + 2] = v.z, wv[4 * q + 3] = v.w;
        }
#pragma unroll
        for (int p = 0; p < PX; p++)
#pragma unroll
          for (int j = 0; j < CO; j++) acc[p][j] = fmaf(col[p + dr], wv[j], acc[p][j]);
      }
    }
    __syncthreads();  // the next channel overwrites tile and ws
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

void cb_run(cb::Io& io) {
  const int cin = static_cast<int>(io.param("cin"));
  const int cout = static_cast<int>(io.param("cout"));
  const int height = static_cast<int>(io.param("height"));
  const int width = static_cast<int>(io.param("width"));
  const size_t plane = static_cast<size_t>(height) * width;
  const size_t lx = cin * plane, lw = static_cast<size_t>(cout) * cin * 9, ly = cout * plane;
  float *d_x, *d_w, *d_y;
  CB_CHECK(cudaMalloc(&d_x, (lx > 0 ? lx : 1) * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_w, (lw > 0 ? lw : 1) * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, (ly > 0 ? ly : 1) * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, io.input<float>("x"), lx * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemcpy(d_w, io.input<float>("w"), lw * sizeof(float), cudaMemcpyHostToDevice));
  launch_conv(d_x, d_w, d_y, cin, cout, height, width);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(io.output<float>("y"), d_y, ly * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_w));
  CB_CHECK(cudaFree(d_y));
}
