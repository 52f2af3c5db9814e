// ANCHOR: kernel
// A half-fix: the scratch matrix is gone (the sum and the division compute exp(x - m) again from
// x), but the steps are still three kernels, and each reads the whole matrix from DRAM: three
// reads and a write where a softmax needs one of each.
__global__ void row_max(const float* x, float* mx, int cols) {
  const float* row = x + static_cast<size_t>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, row[c]);
  m = block_reduce(m, Max{});
  if (threadIdx.x == 0) mx[blockIdx.x] = m;
}

__global__ void row_sum(const float* x, const float* mx, float* sum, int cols) {
  const float* row = x + static_cast<size_t>(blockIdx.x) * cols;
  const float m = mx[blockIdx.x];
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += BLOCK) s += __expf(row[c] - m);
  s = block_reduce(s, Add{});
  if (threadIdx.x == 0) sum[blockIdx.x] = s;
}

__global__ void normalise(const float* x, const float* mx, const float* sum, float* y, int cols) {
  const size_t base = static_cast<size_t>(blockIdx.x) * cols;
  const float m = mx[blockIdx.x];
  const float inv = 1.0f / sum[blockIdx.x];
  for (int c = threadIdx.x; c < cols; c += BLOCK) y[base + c] = __expf(x[base + c] - m) * inv;
}

void softmax(const float* d_x, float* d_y, int rows, int cols) {
  float *d_max, *d_sum;
  CB_CHECK(cudaMalloc(&d_max, rows * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_sum, rows * sizeof(float)));
  row_max<<<rows, BLOCK>>>(d_x, d_max, cols);
  row_sum<<<rows, BLOCK>>>(d_x, d_max, d_sum, cols);
  normalise<<<rows, BLOCK>>>(d_x, d_max, d_sum, d_y, cols);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaFree(d_max));
  CB_CHECK(cudaFree(d_sum));
}
// ANCHOR_END: kernel
