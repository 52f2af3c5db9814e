// 18-heap-double-free: softmax over each row of a matrix, rows of any length.
//
// A block handles a row at a time (grid-stride over the rows): it finds the row's maximum, computes
// exp(x - max) once, keeps the exponentials for the output pass, and writes exp(x - max) / sum.
// A row can be longer than shared memory holds (48 KB: 12,288 floats), so the block keeps its
// exponentials in a scratch row that thread 0 takes from the device heap with malloc().
#include <algorithm>
#include <cmath>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int MAX_BLOCKS = 128;
// The device heap is 8 MB unless the program asks for more before the first kernel that calls
// malloc(). 128 blocks of a row each: rows of up to 100,000 floats.
constexpr size_t HEAP_BYTES = size_t(64) << 20;

// Reduce one value per thread over the block with `op`, in shared memory; every thread gets the
// result.
template <class Op>
__device__ float block_reduce(float v, Op op) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] = op(s[t], s[t + stride]);
    __syncthreads();
  }
  const float result = s[0];
  __syncthreads();  // s is written again by the next call
  return result;
}

struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// ANCHOR: bug
// One scratch row per block, taken once by thread 0 and shared through a __shared__ pointer. Each
// thread writes and reads only its own columns of it (c = t, t + BLOCK, ...). The pointer is
// shared, the allocation is one: the thread that called malloc() is the one that calls free().
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
  // Every thread is done with the scratch row: thread 0, which took it, gives it back, once.
  __syncthreads();
  if (threadIdx.x == 0) free(e);
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int rows = static_cast<int>(io.param("rows"));
  const int cols = static_cast<int>(io.param("cols"));
  const size_t n = static_cast<size_t>(rows) * cols;
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");
  if (n == 0) return;

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
  softmax_rows<<<std::min(rows, MAX_BLOCKS), BLOCK>>>(d_x, d_y, rows, cols);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
