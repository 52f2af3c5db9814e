// 18-heap-double-free: the marked regions of the untouched exercises/18-heap-double-free/softmax.cu. The pristine exercise is
// solutions/18-heap-double-free/softmax.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// One scratch row per block, taken once by thread 0 and shared through a __shared__ pointer. Each
// thread writes and reads only its own columns of it (c = t, t + BLOCK, ...).
__global__ void softmax_rows(const float* x, float* y, int rows, int cols) {
  __shared__ float* e;
  if (threadIdx.x == 0) e = static_cast<float*>(malloc(cols * sizeof(float)));
  __syncthreads();
  if (e == nullptr) return;  // the heap is full: the block's rows stay unwritten
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* row = x + static_cast<size_t>(r) * cols;
    float* out = y + static_cast<size_t>(r) * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, row[c]);
    m = block_reduce(m, Max{});
    float sum = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
      e[c] = __expf(row[c] - m);
      sum += e[c];
    }
    sum = block_reduce(sum, Add{});
    for (int c = threadIdx.x; c < cols; c += BLOCK) out[c] = e[c] / sum;
  }
  // Every thread is done with the scratch row: give it back to the heap.
  __syncthreads();
  free(e);
}
// ANCHOR_END: bug
