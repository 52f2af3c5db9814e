// 08-launch: the marked regions of the untouched exercises/08-launch/softmax.cu. The pristine exercise is
// solutions/08-launch/softmax.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// One thread per column: thread t reads row[t] once and keeps it in a register.
__global__ void softmax_rows(const float* x, float* y, int cols) {
  const float* row = x + static_cast<size_t>(blockIdx.x) * cols;
  float* out = y + static_cast<size_t>(blockIdx.x) * cols;
  const int c = threadIdx.x;
  const float v = row[c];
  const float m = block_reduce(v, Max{});
  const float e = __expf(v - m);
  const float sum = block_reduce(e, Add{});
  out[c] = e / sum;
}

void launch_softmax(const float* d_x, float* d_y, int rows, int cols) {
  softmax_rows<<<rows, cols>>>(d_x, d_y, cols);
}
// ANCHOR_END: bug
