// ANCHOR: kernel
// A half-fix: unroll the row walk by four with float4 loads. Each thread now reads 16 bytes at a
// time, but the 32 lanes of a load still touch 32 different rows: 32 lines per request.
__global__ void row_sums(const float* m, float* sums, int rows, int cols) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* row = m + static_cast<size_t>(r) * cols;
  float acc = 0.0f;
  int c = 0;
  if (cols % 4 == 0) {
    for (; c < cols; c += 4) {
      const float4 v = *reinterpret_cast<const float4*>(row + c);
      acc += v.x + v.y + v.z + v.w;
    }
  }
  for (; c < cols; c++) acc += row[c];
  sums[r] = acc;
}

void launch_row_sums(const float* m, float* sums, int rows, int cols) {
  row_sums<<<(rows + BLOCK - 1) / BLOCK, BLOCK>>>(m, sums, rows, cols);
}
// ANCHOR_END: kernel
