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
// A float4 load must start at an address that is a multiple of 16 bytes. `src` is aligned only
// where `offset` is a multiple of 4, so copy single floats until it is, float4s through the body,
// and single floats for the tail.
__global__ void copy_window(const float* src, float* dst, int len) {
  const int head = static_cast<int>(((16 - reinterpret_cast<uintptr_t>(src) % 16) % 16) / sizeof(float));
  const int lead = min(head, len);
  const int stride = gridDim.x * blockDim.x;
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = tid; i < lead; i += stride) dst[i] = src[i];
  // The destination is not aligned like the source; store it a float at a time.
  const float4* body = reinterpret_cast<const float4*>(src + lead);
  const int vectors = (len - lead) / 4;
  for (int v = tid; v < vectors; v += stride) {
    const float4 f = body[v];
    float* out = dst + lead + 4 * v;
    out[0] = f.x;
    out[1] = f.y;
    out[2] = f.z;
    out[3] = f.w;
  }
  for (int i = lead + 4 * vectors + tid; i < len; i += stride) dst[i] = src[i];
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
