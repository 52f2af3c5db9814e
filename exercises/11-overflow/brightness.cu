// 11-overflow: the mean brightness of every frame in a batch of 8-bit video frames.
//
// A batch of `frames` frames of `frame_len` pixels each lies in one device buffer: 130 frames of
// 4096 x 4096 pixels are 2.2 GB. A test cannot ship that much from the host, so the harness builds
// the batch on the device from one small tile: pixel p of frame f is (tile[p % tile_len] + f) % 256.
// The kernel sums each frame's pixels (the mean is the sum over frame_len).
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int BLOCKS_PER_FRAME = 64;

// Four pixels per 32-bit word, written and read a word at a time (frame_len and tile_len are
// multiples of 4).
__global__ void make_frames(const unsigned* tile, int tile_len, unsigned* words, size_t total_words, int frame_len) {
  for (size_t w = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; w < total_words; w += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t g = 4 * w, f = g / frame_len, p = g % frame_len;
    unsigned word = 0;
    for (int k = 0; k < 4; k++) word |= ((tile[(p + k) % tile_len] + f) & 255u) << (8 * k);
    words[w] = word;
  }
}

__device__ unsigned byte_sum(unsigned w) { return (w & 255u) + ((w >> 8) & 255u) + ((w >> 16) & 255u) + (w >> 24); }

// Grid: BLOCKS_PER_FRAME blocks along x for each frame along y. Each block sums a slice of its
// frame and adds it to the frame's total.
__global__ void frame_sums(const unsigned char* pixels, int frame_len, unsigned* sums) {
  __shared__ unsigned s[BLOCK];
  const int t = threadIdx.x;
  const int words = frame_len / 4;
  // ANCHOR: bug
  const int first = blockIdx.y * frame_len;  // the frame's first pixel
  const unsigned* frame = reinterpret_cast<const unsigned*>(pixels + first);
  unsigned acc = 0;
  for (int w = blockIdx.x * BLOCK + t; w < words; w += gridDim.x * BLOCK) acc += byte_sum(frame[w]);
  // ANCHOR_END: bug
  s[t] = acc;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) atomicAdd(&sums[blockIdx.y], s[0]);
}

void cb_run(cb::Io& io) {
  const int frames = static_cast<int>(io.param("frames"));
  const int frame_len = static_cast<int>(io.param("frame_len"));
  const int tile_len = static_cast<int>(io.param("tile_len"));
  const unsigned* h_tile = io.input<unsigned>("tile");
  unsigned* h_sums = io.output<unsigned>("sums");
  const size_t total = static_cast<size_t>(frames) * frame_len;

  unsigned *d_tile, *d_sums;
  unsigned char* d_pixels;
  CB_CHECK(cudaMalloc(&d_tile, tile_len * sizeof(unsigned)));
  CB_CHECK(cudaMalloc(&d_pixels, total));
  CB_CHECK(cudaMalloc(&d_sums, frames * sizeof(unsigned)));
  CB_CHECK(cudaMemcpy(d_tile, h_tile, tile_len * sizeof(unsigned), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemset(d_sums, 0, frames * sizeof(unsigned)));
  make_frames<<<4096, BLOCK>>>(d_tile, tile_len, reinterpret_cast<unsigned*>(d_pixels), total / 4, frame_len);
  CB_CHECK(cudaGetLastError());

  frame_sums<<<dim3(BLOCKS_PER_FRAME, frames), BLOCK>>>(d_pixels, frame_len, d_sums);
  CB_CHECK(cudaGetLastError());

  CB_CHECK(cudaMemcpy(h_sums, d_sums, frames * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_tile));
  CB_CHECK(cudaFree(d_pixels));
  CB_CHECK(cudaFree(d_sums));
}
