// 02-bounds: per-channel scale, bias and ReLU over an NCHW feature map.
//
// y[i] = max(0, x[i] * scale[c] + bias[c]) where c is the channel of element i. This is the
// inference-time form of batch normalisation followed by ReLU. One thread per element; the element
// count is batch * channels * height * width, which is rarely a multiple of the block size.
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

__global__ void scale_bias_relu(const float* x, const float* scale, const float* bias, float* y,
                                int n, int channels, int hw) {
  // ANCHOR: bug
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;  // the last block has threads past the end of the data
  const int c = (i / hw) % channels;
  y[i] = fmaxf(0.0f, x[i] * scale[c] + bias[c]);
  // ANCHOR_END: bug
}

void cb_run(cb::Io& io) {
  const int channels = static_cast<int>(io.param("channels"));
  const int hw = static_cast<int>(io.param("hw"));
  const int n = static_cast<int>(io.param("batch")) * channels * hw;
  const float* h_x = io.input<float>("x");
  const float* h_scale = io.input<float>("scale");
  const float* h_bias = io.input<float>("bias");
  float* h_y = io.output<float>("y");

  float *d_x, *d_scale, *d_bias, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_scale, channels * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_bias, channels * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemcpy(d_scale, h_scale, channels * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemcpy(d_bias, h_bias, channels * sizeof(float), cudaMemcpyHostToDevice));

  // Round the grid up so every element gets a thread: the last block is only partly needed.
  const int blocks = (n + BLOCK - 1) / BLOCK;
  scale_bias_relu<<<blocks, BLOCK>>>(d_x, d_scale, d_bias, d_y, n, channels, hw);
  CB_CHECK(cudaGetLastError());

  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
  CB_CHECK(cudaFree(d_scale));
  CB_CHECK(cudaFree(d_bias));
}
