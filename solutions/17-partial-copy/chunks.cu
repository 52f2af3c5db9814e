// 17-partial-copy: y = x * x + 1 over a long vector, in chunks.
//
// The input arrives in chunks of CHUNK elements (from a file, a socket, a camera); each chunk is
// copied to the device, transformed and copied into its place in the device output while the
// next one is read. At the end the whole output comes back in one copy.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int CHUNK = 65536;
constexpr int BLOCK = 256;

__global__ void square_plus_one(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i] * x[i] + 1.0f;
}

// ANCHOR: bug
// Every chunk, the last one too, which may be shorter than CHUNK.
void process_in_chunks(const float* h_x, float* h_y, int n, float* d_chunk, float* d_y) {
  for (int off = 0; off < n; off += CHUNK) {
    const int len = std::min(CHUNK, n - off);
    CB_CHECK(cudaMemcpy(d_chunk, h_x + off, len * sizeof(float), cudaMemcpyHostToDevice));
    square_plus_one<<<(len + BLOCK - 1) / BLOCK, BLOCK>>>(d_chunk, d_y + off, len);
    CB_CHECK(cudaGetLastError());
  }
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");

  float *d_chunk, *d_y;
  CB_CHECK(cudaMalloc(&d_chunk, CHUNK * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  process_in_chunks(h_x, h_y, n, d_chunk, d_y);
  CB_CHECK(cudaFree(d_chunk));
  CB_CHECK(cudaFree(d_y));
}
