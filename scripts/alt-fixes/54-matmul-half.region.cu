// ANCHOR: kernel
// A half-fix: the classic shared-memory tiling of the textbooks. 32 x 32 tiles of A and B are staged
// in shared memory, and each thread still computes one element of C: two shared loads per FMA.
constexpr int T = 32;

__global__ void matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ float as[T][T];
  __shared__ float bs[T][T + 1];
  const int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += T) {
    as[threadIdx.y][threadIdx.x] = (row < m && k0 + threadIdx.x < k) ? a[static_cast<size_t>(row) * k + k0 + threadIdx.x] : 0.0f;
    bs[threadIdx.y][threadIdx.x] = (k0 + threadIdx.y < k && col < n) ? b[static_cast<size_t>(k0 + threadIdx.y) * n + col] : 0.0f;
    __syncthreads();
    for (int i = 0; i < T; i++) acc += as[threadIdx.y][i] * bs[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[static_cast<size_t>(row) * n + col] = acc;
}

void launch_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
  const dim3 block(T, T), grid((n + T - 1) / T, (m + T - 1) / T);
  matmul<<<grid, block>>>(a, b, c, m, n, k);
}
// ANCHOR_END: kernel
