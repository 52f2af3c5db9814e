// ANCHOR: kernel
// Another fix: keep one thread per row for the sum, but stage a 32-column slab of 32 rows through
// shared memory: the block reads the slab coalesced (lane = column), then each thread adds its row
// from shared memory (padded by one so the column reads hit 32 different banks).
__global__ void row_sums(const float* m, float* sums, int rows, int cols) {
  __shared__ float slab[BLOCK / 32][32][33];
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  const int first = blockIdx.x * 32;  // this block's 32 rows
  float acc = 0.0f;
  for (int c0 = 0; c0 < cols; c0 += 32 * (BLOCK / 32)) {
    // Warp w loads columns c0 + 32w .. c0 + 32w + 31 of the block's 32 rows.
    for (int rr = 0; rr < 32; rr++) {
      const int r = first + rr, c = c0 + 32 * w + lane;
      slab[w][rr][lane] = (r < rows && c < cols) ? m[static_cast<size_t>(r) * cols + c] : 0.0f;
    }
    __syncthreads();
    // Thread (w, lane) adds row `lane`'s 32 columns of slab w.
    for (int cc = 0; cc < 32; cc++) acc += slab[w][lane][cc];
    __syncthreads();
  }
  // The 8 warps hold partial sums of the same 32 rows: add them up through shared memory.
  __shared__ float part[BLOCK / 32][32];
  part[w][lane] = acc;
  __syncthreads();
  if (w == 0 && first + lane < rows) {
    float total = 0.0f;
    for (int k = 0; k < BLOCK / 32; k++) total += part[k][lane];
    sums[first + lane] = total;
  }
}

void launch_row_sums(const float* m, float* sums, int rows, int cols) {
  row_sums<<<(rows + 31) / 32, BLOCK>>>(m, sums, rows, cols);
}
// ANCHOR_END: kernel
