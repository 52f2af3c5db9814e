// 06-misaligned: cut a window out of a long sample stream, 16 bytes at a time.
//
// A capture holds n float samples; the window starts at any sample `offset` and is `len` long.
// The copy moves float4 vectors (one 16-byte load and store per thread instead of four 4-byte
// ones), the usual way to get close to the memory bandwidth in a copy.
#include <algorithm>
#include <cstdint>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

// ANCHOR: bug
// Four floats per thread: one 16-byte load, one 16-byte store. The tail that does not fill a
// float4 is copied one float at a time.
__global__ void copy_window(const float* src, float* dst, int len) {
  const int stride = gridDim.x * blockDim.x;
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  const int vectors = len / 4;
  for (int v = tid; v < vectors; v += stride) {
    const float4 f = reinterpret_cast<const float4*>(src)[v];
    float* out = dst + 4 * v;
    out[0] = f.x;
    out[1] = f.y;
    out[2] = f.z;
    out[3] = f.w;
  }
  for (int i = 4 * vectors + tid; i < len; i += stride) dst[i] = src[i];
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const int offset = static_cast<int>(io.param("offset"));
  const int len = static_cast<int>(io.param("len"));
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");

  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, len * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));

  const int blocks = std::max(1, std::min((len / 4 + BLOCK - 1) / BLOCK, 4096));
  copy_window<<<blocks, BLOCK>>>(d_x + offset, d_y, len);
  CB_CHECK(cudaGetLastError());

  CB_CHECK(cudaMemcpy(h_y, d_y, len * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
