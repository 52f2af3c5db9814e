// 31-pitch: a 3x3 box blur of a grayscale image kept in pitched device memory.
//
// cudaMallocPitch allocates a 2-D array whose rows each start on an aligned address: it pads every
// row of `width` floats up to `pitch` bytes and returns the pitch. cudaMemcpy2D copies the image in
// and out row by row, `width` floats from each row, and leaves the padding alone. out[r][c] is the
// mean of the 3x3 neighbourhood of pixel (r, c), the border pixels repeated past the edge.
// Run it plainly and see which rows come out right. Run the check and see what the tool says.
#include "cudabugs.cuh"

constexpr int BX = 32, BY = 8;

__global__ void box_blur(const float* img, size_t img_pitch, float* out, size_t out_pitch, int width, int height) {
  const int c = blockIdx.x * BX + threadIdx.x;
  const int r = blockIdx.y * BY + threadIdx.y;
  if (c >= width || r >= height) return;
  // ANCHOR: bug
  // The 3x3 neighbourhood, rows and columns clamped at the border. The pitch is in bytes: row rr
  // starts rr * pitch bytes into the allocation, so the row pointer is found in bytes (char*).
  float sum = 0.0f;
  for (int dr = -1; dr <= 1; dr++) {
    const int rr = min(max(r + dr, 0), height - 1);
    const float* row = reinterpret_cast<const float*>(reinterpret_cast<const char*>(img) + rr * img_pitch);
    for (int dc = -1; dc <= 1; dc++) sum += row[min(max(c + dc, 0), width - 1)];
  }
  float* out_row = reinterpret_cast<float*>(reinterpret_cast<char*>(out) + r * out_pitch);
  out_row[c] = sum / 9.0f;
  // ANCHOR_END: bug
}

void cb_run(cb::Io& io) {
  const int width = static_cast<int>(io.param("width"));
  const int height = static_cast<int>(io.param("height"));
  const float* h_img = io.input<float>("img");
  float* h_out = io.output<float>("out");
  const size_t row_bytes = width * sizeof(float);

  // Two pitched images; each call returns its own pitch (in bytes, at least row_bytes).
  float *d_img, *d_out;
  size_t img_pitch, out_pitch;
  CB_CHECK(cudaMallocPitch(&d_img, &img_pitch, row_bytes, height));
  CB_CHECK(cudaMallocPitch(&d_out, &out_pitch, row_bytes, height));
  // Row r of the host image (row_bytes apart) to row r of the device image (img_pitch apart).
  CB_CHECK(cudaMemcpy2D(d_img, img_pitch, h_img, row_bytes, row_bytes, height, cudaMemcpyHostToDevice));

  const dim3 block(BX, BY);
  const dim3 grid((width + BX - 1) / BX, (height + BY - 1) / BY);
  box_blur<<<grid, block>>>(d_img, img_pitch, d_out, out_pitch, width, height);
  CB_CHECK(cudaGetLastError());

  CB_CHECK(cudaMemcpy2D(h_out, row_bytes, d_out, out_pitch, row_bytes, height, cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_img));
  CB_CHECK(cudaFree(d_out));
}
