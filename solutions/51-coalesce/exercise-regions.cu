// 51-coalesce: the marked region of the untouched exercises/51-coalesce/rowsums.cu: `reset` restores it, `list`
// compares against it and the book shows it.
// ANCHOR: kernel
// One thread per row: thread r adds up row r from left to right. Simple, and every thread does the
// same amount of work.
__global__ void row_sums(const float* m, float* sums, int rows, int cols) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* row = m + static_cast<size_t>(r) * cols;
  float acc = 0.0f;
  for (int c = 0; c < cols; c++) acc += row[c];
  sums[r] = acc;
}

void launch_row_sums(const float* m, float* sums, int rows, int cols) {
  row_sums<<<(rows + BLOCK - 1) / BLOCK, BLOCK>>>(m, sums, rows, cols);
}
// ANCHOR_END: kernel
