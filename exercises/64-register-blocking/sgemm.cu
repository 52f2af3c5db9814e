// 64-register-blocking: C = A * B in fp32, row-major: A is m x k, B is k x n, C is m x n.
//
// The kernel is the textbook shared-memory tiling: each value of A and B comes from global memory
// once per block, not once per thread. The answer is right. It is slow: count the shared-memory
// loads for every multiply-add, and how many of them an SM can serve per cycle.
#include "cudabugs.cuh"

// ANCHOR: kernel
// Shared-memory tiling, the textbook way. A block of 32 x 32 threads computes a 32 x 32 tile of C,
// one element per thread. For every step of 32 along k the block stages a 32 x 32 tile of A and one
// of B in shared memory, so each value comes from global memory once per block instead of once per
// thread; then each thread runs its dot product over the two tiles.
constexpr int TILE = 32;

__global__ void matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ float as[TILE][TILE];  // as[ty][i] = A[row][k0 + i]
  __shared__ float bs[TILE][TILE];  // bs[i][tx] = B[k0 + i][col]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += TILE) {
    as[ty][tx] = (row < m && k0 + tx < k) ? a[static_cast<size_t>(row) * k + k0 + tx] : 0.0f;
    bs[ty][tx] = (k0 + ty < k && col < n) ? b[static_cast<size_t>(k0 + ty) * n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < TILE; i++) acc = fmaf(as[ty][i], bs[i][tx], acc);
    __syncthreads();
  }
  if (row < m && col < n) c[static_cast<size_t>(row) * n + col] = acc;
}

void launch_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  const dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
  matmul<<<grid, block>>>(a, b, c, m, n, k);
}
// ANCHOR_END: kernel

void cb_run(cb::Io& io) {
  const int m = static_cast<int>(io.param("m"));
  const int n = static_cast<int>(io.param("n"));
  const int k = static_cast<int>(io.param("k"));
  const size_t la = static_cast<size_t>(m) * k, lb = static_cast<size_t>(k) * n, lc = static_cast<size_t>(m) * n;
  float *d_a, *d_b, *d_c;
  CB_CHECK(cudaMalloc(&d_a, la * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_b, lb * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_c, lc * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_a, io.input<float>("a"), la * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemcpy(d_b, io.input<float>("b"), lb * sizeof(float), cudaMemcpyHostToDevice));
  launch_matmul(d_a, d_b, d_c, m, n, k);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(io.output<float>("c"), d_c, lc * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_a));
  CB_CHECK(cudaFree(d_b));
  CB_CHECK(cudaFree(d_c));
}
