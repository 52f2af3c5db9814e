// 54-matmul: C = A * B in fp32, row-major: A is m x k, B is k x n, C is m x n.
//
// The answer is right. It is slow: count how many times each value of A and B is loaded, and
// where from, for every multiply-add.
#include "cudabugs.cuh"

// ANCHOR: kernel
// One thread per element of C: a dot product of a row of A and a column of B, straight from
// global memory.
__global__ void matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= m || col >= n) return;
  float acc = 0.0f;
  for (int i = 0; i < k; i++) acc += a[static_cast<size_t>(row) * k + i] * b[static_cast<size_t>(i) * n + col];
  c[static_cast<size_t>(row) * n + col] = acc;
}

void launch_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  const dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
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
