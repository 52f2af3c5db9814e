// 61-convolution: a 3 x 3 convolution layer, as the first layers of an image network run it. The
// input is an image of `cin` channels (each height x width, row-major, one channel after another),
// the weights are `cout` filters of cin x 3 x 3, the padding is zeros and the stride 1:
//   y[o][r][c] = sum over i, dr, dc of w[o][i][dr][dc] * x[i][r + dr - 1][c + dc - 1].
//
// The answer is right (to float rounding). It is slow: count the loads for every multiply-add, and
// how many times each input value and each weight is loaded over the whole layer.
#include "cudabugs.cuh"

// ANCHOR: kernel
// One thread per output value: a block is 16 x 16 pixels of one output channel, and each thread
// loops over the cin x 3 x 3 inputs and weights it needs, straight from global memory.
__global__ void conv3x3(const float* x, const float* w, float* y, int cin, int cout, int height, int width) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  const int o = blockIdx.z;
  if (r >= height || c >= width) return;
  const size_t plane = static_cast<size_t>(height) * width;
  float acc = 0.0f;
  for (int i = 0; i < cin; i++) {
    const float* xi = x + i * plane;
    const float* wi = w + (static_cast<size_t>(o) * cin + i) * 9;
    for (int dr = 0; dr < 3; dr++) {
      const int rr = r + dr - 1;
      for (int dc = 0; dc < 3; dc++) {
        const int cc = c + dc - 1;
        const bool inside = rr >= 0 && rr < height && cc >= 0 && cc < width;
        acc += (inside ? xi[static_cast<size_t>(rr) * width + cc] : 0.0f) * wi[dr * 3 + dc];
      }
    }
  }
  y[o * plane + static_cast<size_t>(r) * width + c] = acc;
}

void launch_conv(const float* x, const float* w, float* y, int cin, int cout, int height, int width) {
  if (cout == 0 || height == 0 || width == 0) return;
  const dim3 block(16, 16), grid((width + 15) / 16, (height + 15) / 16, cout);
  conv3x3<<<grid, block>>>(x, w, y, cin, cout, height, width);
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
