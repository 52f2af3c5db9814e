// cudabugs baseline: cuBLAS fp32 SGEMM at an exercise's bench size, timed by ncu in the same session
// as the exercise (every kernel this program launches is cuBLAS's).
//
//   baseline-sgemm M N K REPEAT
//
// C (M x N) = A (M x K) * B (K x N), row-major like the exercise, with TF32 off (CUBLAS_DEFAULT_MATH:
// true fp32). The values do not change the time. Exit status: 0 ok,
// 2 bad usage, 3 a CUDA or cuBLAS error.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include "cudabugs.cuh"  // CB_CHECK

#define CHECK_BLAS(call)                                                                        \
  do {                                                                                          \
    cublasStatus_t s_ = (call);                                                                 \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                          \
      std::fprintf(stderr, "cuBLAS error at %s:%d: %d\n", __FILE__, __LINE__, static_cast<int>(s_)); \
      std::exit(3);                                                                             \
    }                                                                                           \
  } while (0)

// Values in [-1, 1), copied from the host so that the only kernels launched are cuBLAS's.
void fill(float* device, size_t n) {
  std::vector<float> host(n);
  for (size_t i = 0; i < n; i++) host[i] = static_cast<float>((i * 2654435761u) % 1000u) / 500.0f - 1.0f;
  CB_CHECK(cudaMemcpy(device, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
}

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: baseline-sgemm M N K REPEAT\n");
    return 2;
  }
  const long m = std::atol(argv[1]), n = std::atol(argv[2]), k = std::atol(argv[3]);
  const int repeat = std::atoi(argv[4]);
  if (m <= 0 || n <= 0 || k <= 0 || repeat <= 0) {
    std::fprintf(stderr, "baseline-sgemm: M, N, K and REPEAT must be positive\n");
    return 2;
  }
  float *a, *b, *c;
  CB_CHECK(cudaMalloc(&a, m * k * sizeof(float)));
  CB_CHECK(cudaMalloc(&b, k * n * sizeof(float)));
  CB_CHECK(cudaMalloc(&c, m * n * sizeof(float)));
  fill(a, m * k);
  fill(b, k * n);
  cublasHandle_t handle;
  CHECK_BLAS(cublasCreate(&handle));
  CHECK_BLAS(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  const float one = 1.0f, zero = 0.0f;
  // Row-major C = A B is column-major C^T = B^T A^T: swap the operands.
  for (int r = 0; r < repeat; r++)
    CHECK_BLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c, n));
  CB_CHECK(cudaDeviceSynchronize());
  CHECK_BLAS(cublasDestroy(handle));
  CB_CHECK(cudaFree(a));
  CB_CHECK(cudaFree(b));
  CB_CHECK(cudaFree(c));
  return 0;
}
