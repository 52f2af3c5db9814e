// ANCHOR: bug
// Another fix: no scratch row, no heap. The output pass computes exp(x - max) a second time
// instead of keeping it: one more __expf per element, and nothing to allocate or free.
__global__ void softmax_rows(const float* x, float* y, int rows, int cols) {
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* row = x + static_cast<size_t>(r) * cols;
    float* out = y + static_cast<size_t>(r) * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, row[c]);
    m = block_reduce(m, Max{});
    float sum = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) sum += __expf(row[c] - m);
    sum = block_reduce(sum, Add{});
    for (int c = threadIdx.x; c < cols; c += BLOCK) out[c] = __expf(row[c] - m) / sum;
  }
}
// ANCHOR_END: bug
