// ANCHOR: bug
__global__ void median_filter(const float* x, float* y, int n, int r) {
  const int w = 2 * r + 1;
  const int first = blockIdx.x * blockDim.x + threadIdx.x;
  // A half-fix: the idle threads now leave before the malloc(), but the r == 0 path below still
  // returns with its scratch (the case with r = 0 leaks every thread's).
  if (first >= n) return;
  float* win = static_cast<float*>(malloc(w * sizeof(float)));
  if (win == nullptr) return;  // the heap is full: this thread's elements stay unwritten
  const int stride = gridDim.x * blockDim.x;
  // A window of one element is the element: nothing to sort.
  if (r == 0) {
    for (int i = first; i < n; i += stride) y[i] = x[i];
    return;
  }
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
