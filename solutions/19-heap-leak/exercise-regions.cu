// 19-heap-leak: the marked regions of the untouched exercises/19-heap-leak/median.cu. The pristine exercise is
// solutions/19-heap-leak/median.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
__global__ void median_filter(const float* x, float* y, int n, int r) {
  const int w = 2 * r + 1;
  float* win = static_cast<float*>(malloc(w * sizeof(float)));
  if (win == nullptr) return;  // the heap is full: this thread's elements stay unwritten
  const int first = blockIdx.x * blockDim.x + threadIdx.x;
  const int stride = gridDim.x * blockDim.x;
  // A window of one element is the element: nothing to sort.
  if (r == 0) {
    for (int i = first; i < n; i += stride) y[i] = x[i];
    return;
  }
  // The last block of a short input has threads with no element at all: nothing to do.
  if (first >= n) return;
  for (int i = first; i < n; i += stride) {
    // Gather the window (clamped at the ends) and insertion-sort it.
    for (int k = 0; k < w; k++) {
      const int j = min(max(i + k - r, 0), n - 1);
      const float v = x[j];
      int p = k;
      while (p > 0 && win[p - 1] > v) {
        win[p] = win[p - 1];
        p--;
      }
      win[p] = v;
    }
    y[i] = win[r];
  }
  free(win);
}
// ANCHOR_END: bug
