// 67-zero-copy: the temperature along a heated rod, by Jacobi sweeps.
//
// A rod of n cells is heated along its length (f[i], the heat put into cell i) and held at 0
// degrees at both ends. Its steady temperature u solves 2 u[i] - u[i - 1] - u[i + 1] = f[i] (the
// grid spacing folded into f). A Jacobi sweep gives every cell the value that solves its own
// equation with its neighbours' current values, u'[i] = (f[i] + u[i - 1] + u[i + 1]) / 2; u is the
// result of `sweeps` sweeps from u = 0 (a multigrid solver runs a few such sweeps as its smoother).
// Each sweep adds in the same order as the Rust reference, so every bit matches it.
//
// The answer is right. It is slow: look at where each sweep reads f from, and how often.
#include <cstdint>
#include <utility>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

// ANCHOR: sweeps
// One sweep, one thread per cell; the cells past the ends are held at 0.
__global__ void jacobi_sweep(const float* f, const float* u, float* u_next, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float left = i > 0 ? u[i - 1] : 0.0f;
  const float right = i + 1 < n ? u[i + 1] : 0.0f;
  u_next[i] = 0.5f * (f[i] + left + right);
}

// `sweeps` sweeps (at least one) from u = 0. The harness's buffers are pinned, and pinned host
// memory is mapped into the GPU's address space: a kernel can read f where it lies and write the
// last sweep straight into h_u, with no copy and no device buffer for either. The sweeps in between
// go to two device buffers in turn.
void relax(const float* h_f, float* h_u, size_t n, int sweeps) {
  void *mapped_f, *mapped_u;
  CB_CHECK(cudaHostGetDevicePointer(&mapped_f, const_cast<float*>(h_f), 0));
  CB_CHECK(cudaHostGetDevicePointer(&mapped_u, h_u, 0));
  const float* f = static_cast<const float*>(mapped_f);
  float* out = static_cast<float*>(mapped_u);
  float *u, *next;
  CB_CHECK(cudaMallocAsync(&u, n * sizeof(float), 0));
  CB_CHECK(cudaMallocAsync(&next, n * sizeof(float), 0));
  CB_CHECK(cudaMemsetAsync(u, 0, n * sizeof(float), 0));
  const unsigned blocks = static_cast<unsigned>((n + BLOCK - 1) / BLOCK);
  for (int s = 0; s < sweeps; s++) {
    jacobi_sweep<<<blocks, BLOCK>>>(f, u, s == sweeps - 1 ? out : next, n);
    CB_CHECK(cudaGetLastError());
    std::swap(u, next);
  }
  CB_CHECK(cudaFreeAsync(u, 0));
  CB_CHECK(cudaFreeAsync(next, 0));
  CB_CHECK(cudaStreamSynchronize(0));  // the last sweep's stores to h_u have landed
}
// ANCHOR_END: sweeps

void cb_run(cb::Io& io) {
  const size_t n = static_cast<size_t>(io.param("n"));
  const int sweeps = static_cast<int>(io.param("sweeps"));
  if (n == 0 || sweeps < 1) return;
  // Stream-ordered allocations from a pool that keeps its memory between calls: cudaMalloc and
  // cudaFree cost a call 0.2-0.4 ms each on an H100, and would blur what the sweeps cost.
  static bool pool_kept = false;
  if (!pool_kept) {
    cudaMemPool_t pool;
    uint64_t keep_all = UINT64_MAX;
    CB_CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    CB_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
    pool_kept = true;
  }
  relax(io.input<float>("f"), io.output<float>("u"), n, sweeps);
}
