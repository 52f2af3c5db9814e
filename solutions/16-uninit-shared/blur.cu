// 16-uninit-shared: a 3x3 box blur of a grayscale image, edges clamped.
//
// Each 16x16 block stages an 18x18 tile in shared memory: its own 16x16 pixels and a one-pixel
// frame around them (the halo), so that each pixel is read from global memory once, not nine
// times. Then each thread averages the 3x3 neighbourhood of its pixel from the tile.
#include "cudabugs.cuh"

constexpr int TILE = 16;

__device__ float pixel(const float* img, int width, int height, int r, int c) {
  r = min(max(r, 0), height - 1);
  c = min(max(c, 0), width - 1);
  return img[static_cast<size_t>(r) * width + c];
}

__global__ void box_blur3(const float* img, float* out, int width, int height) {
  __shared__ float tile[TILE + 2][TILE + 2];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
  // Tile cell (y, x) holds image pixel (r0 + y - 1, c0 + x - 1).
  // ANCHOR: bug
  // Every cell of the 18x18 tile, the corners of the frame included: 324 cells, 256 threads.
  for (int k = ty * TILE + tx; k < (TILE + 2) * (TILE + 2); k += TILE * TILE) {
    const int y = k / (TILE + 2), x = k % (TILE + 2);
    tile[y][x] = pixel(img, width, height, r0 + y - 1, c0 + x - 1);
  }
  // ANCHOR_END: bug
  __syncthreads();
  const int r = r0 + ty, c = c0 + tx;
  if (r < height && c < width) {
    float sum = 0.0f;
    for (int dy = 0; dy < 3; dy++)
      for (int dx = 0; dx < 3; dx++) sum += tile[ty + dy][tx + dx];
    out[static_cast<size_t>(r) * width + c] = sum / 9.0f;
  }
}

void cb_run(cb::Io& io) {
  const int width = static_cast<int>(io.param("width"));
  const int height = static_cast<int>(io.param("height"));
  const size_t n = static_cast<size_t>(width) * height;
  const float* h_img = io.input<float>("img");
  float* h_out = io.output<float>("out");

  float *d_img, *d_out;
  CB_CHECK(cudaMalloc(&d_img, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_img, h_img, n * sizeof(float), cudaMemcpyHostToDevice));
  const dim3 block(TILE, TILE), grid((width + TILE - 1) / TILE, (height + TILE - 1) / TILE);
  box_blur3<<<grid, block>>>(d_img, d_out, width, height);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_out, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_img));
  CB_CHECK(cudaFree(d_out));
}
