// 54-matmul: the marked region of the untouched exercises/54-matmul/sgemm.cu: `reset` restores it, `list`
// compares against it and the book shows it.
// ANCHOR: kernel
// One thread per element of C: a dot product of a row of A and a column of B, straight from
// global memory.
__global__ void matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= m || col >= n) return;
  float acc = 0.0f;
  for (int i = 0; i < k; i++) acc += a[static_cast<size_t>(row) * k + i] * b[static_cast<size_t>(i) * n + col];
  c[static_cast<size_t>(row) * n + col] = acc;
}

void launch_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  const dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
  matmul<<<grid, block>>>(a, b, c, m, n, k);
}
// ANCHOR_END: kernel
