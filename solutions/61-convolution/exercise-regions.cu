// 61-convolution: the marked region of the untouched exercises/61-convolution/conv.cu: `reset` restores it, `list`
// compares against it and the book shows it.
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
