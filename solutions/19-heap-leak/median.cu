// 19-heap-leak: a running median, the classic filter against spikes (salt-and-pepper noise).
//
// y[i] is the median of the window x[i - r] ... x[i + r] (clamped at the ends): the window's values
// sorted, the middle one taken. The radius r is a run-time parameter, so the window cannot be a
// local array of fixed size: each thread sorts its windows in scratch it takes from the device heap
// with malloc(), once, and reuses for every element of its grid-stride loop.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int MAX_BLOCKS = 128;
// The device heap is 8 MB unless the program asks for more before the first kernel that calls
// malloc(). 32,768 threads with a window each: radii up to about 200.
constexpr size_t HEAP_BYTES = size_t(64) << 20;

// ANCHOR: bug
// Every path out of the kernel after the malloc() must free: so the two early exits come first,
// before there is anything to give back, and the one path that allocates frees at its end.
__global__ void median_filter(const float* x, float* y, int n, int r) {
  const int first = blockIdx.x * blockDim.x + threadIdx.x;
  const int stride = gridDim.x * blockDim.x;
  // The last block of a short input has threads with no element at all: nothing to do.
  if (first >= n) return;
  // A window of one element is the element: nothing to sort, no scratch.
  if (r == 0) {
    for (int i = first; i < n; i += stride) y[i] = x[i];
    return;
  }
  const int w = 2 * r + 1;
  float* win = static_cast<float*>(malloc(w * sizeof(float)));
  if (win == nullptr) return;  // the heap is full: this thread's elements stay unwritten
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

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const int r = static_cast<int>(io.param("r"));
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");
  if (n == 0) return;
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);

  // The heap's size can be set only before the first kernel that uses it: once per process.
  static bool heap_sized = false;
  if (!heap_sized) {
    CB_CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, HEAP_BYTES));
    heap_sized = true;
  }

  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  median_filter<<<blocks, BLOCK>>>(d_x, d_y, n, r);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
