// 66-softmax-fused: the marked region of the untouched exercises/66-softmax-fused/softmax.cu: `reset` restores it, `list`
// compares against it and the book shows it.
// ANCHOR: kernel
// Step 1: the maximum of each row.
__global__ void row_max(const float* x, float* mx, int cols) {
  const float* row = x + static_cast<size_t>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, row[c]);
  m = block_reduce(m, Max{});
  if (threadIdx.x == 0) mx[blockIdx.x] = m;
}

// Step 2: the numerators, e = exp(x - m).
__global__ void exp_shift(const float* x, const float* mx, float* e, int cols) {
  const size_t base = static_cast<size_t>(blockIdx.x) * cols;
  const float m = mx[blockIdx.x];
  for (int c = threadIdx.x; c < cols; c += BLOCK) e[base + c] = __expf(x[base + c] - m);
}

// Step 3: the denominators, the sum of each row of e.
__global__ void row_sum(const float* e, float* sum, int cols) {
  const float* row = e + static_cast<size_t>(blockIdx.x) * cols;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += BLOCK) s += row[c];
  s = block_reduce(s, Add{});
  if (threadIdx.x == 0) sum[blockIdx.x] = s;
}

// Step 4: y = e / sum.
__global__ void normalise(const float* e, const float* sum, float* y, int cols) {
  const size_t base = static_cast<size_t>(blockIdx.x) * cols;
  const float inv = 1.0f / sum[blockIdx.x];
  for (int c = threadIdx.x; c < cols; c += BLOCK) y[base + c] = e[base + c] * inv;
}

void softmax(const float* d_x, float* d_y, int rows, int cols) {
  float *d_max, *d_sum, *d_e;
  CB_CHECK(cudaMalloc(&d_max, rows * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_sum, rows * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_e, static_cast<size_t>(rows) * cols * sizeof(float)));
  row_max<<<rows, BLOCK>>>(d_x, d_max, cols);
  exp_shift<<<rows, BLOCK>>>(d_x, d_max, d_e, cols);
  row_sum<<<rows, BLOCK>>>(d_e, d_sum, cols);
  normalise<<<rows, BLOCK>>>(d_e, d_sum, d_y, cols);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaFree(d_max));
  CB_CHECK(cudaFree(d_sum));
  CB_CHECK(cudaFree(d_e));
}
// ANCHOR_END: kernel
