// 44-tensor-map: C = A * B in single precision, the tiles of A and B brought into shared memory by the
// Tensor Memory Accelerator's tensor copies (TMA, Hopper, sm_90).
//
// A block computes a BM x BN tile of C, stepping along k by BK: per step one thread starts two 2-D
// tensor copies (cp.async.bulk.tensor), a BM x BK tile of A and a BK x BN tile of B, onto one mbarrier
// (cuda::barrier) that expects their bytes; every thread then does its 4 x 4 share of the products.
// What a tensor copy moves is fixed on the host: cuTensorMapEncodeTiled describes the matrix in
// global memory (its dimensions, its row pitch in bytes) and the box that one copy moves, and the
// kernel receives the map by value as a __grid_constant__ parameter. A copy clips at the matrix's
// edges and fills the rest of the box with zeros, so partial tiles need no special case. The
// program does not link the driver library: the runtime hands out the driver's encoder
// (cudaGetDriverEntryPointByVersion).
// Run it plainly and the products are wrong. No tool says a word: find out why.
#include <cuda/barrier>
#include <cudaTypedefs.h>  // CUtensorMap and the encoder's function type (types only)
#include <utility>
#include "cudabugs.cuh"

using barrier = cuda::barrier<cuda::thread_scope_block>;
namespace cde = cuda::device::experimental;

constexpr int BM = 64;  // rows of C (and of A) per block
constexpr int BN = 64;  // columns of C (and of B) per block
constexpr int BK = 16;  // step along k
constexpr int THREADS = 256;

__global__ void __launch_bounds__(THREADS) tma_matmul(const __grid_constant__ CUtensorMap map_a,
                                                      const __grid_constant__ CUtensorMap map_b,
                                                      float* c, int m, int n, int k) {
  __shared__ alignas(128) float sa[BM][BK];  // a tile of A: BM rows of BK floats
  __shared__ alignas(128) float sb[BK][BN];  // a tile of B: BK rows of BN floats
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ barrier bar;
  if (threadIdx.x == 0) {
    init(&bar, blockDim.x);               // every thread arrives once per step
    cde::fence_proxy_async_shared_cta();  // make the initialised barrier visible to the copy engine
  }
  __syncthreads();

  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;  // rows ty + 16 i, columns tx + 16 j
  float acc[4][4] = {};
  for (int k0 = 0; k0 < k; k0 += BK) {
    barrier::arrival_token token;
    if (threadIdx.x == 0) {
      // Coordinates go innermost dimension first: (column, row).
      cde::cp_async_bulk_tensor_2d_global_to_shared(&sa, &map_a, k0, m0, bar);
      cde::cp_async_bulk_tensor_2d_global_to_shared(&sb, &map_b, n0, k0, bar);
      token = cuda::device::barrier_arrive_tx(bar, 1, sizeof(sa) + sizeof(sb));
    } else {
      token = bar.arrive();
    }
    bar.wait(std::move(token));  // both tiles are in
#pragma unroll
    for (int kk = 0; kk < BK; kk++) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; i++) a[i] = sa[ty + 16 * i][kk];
#pragma unroll
      for (int j = 0; j < 4; j++) b[j] = sb[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // everyone has read the tiles before the next copies overwrite them
  }

#pragma unroll
  for (int i = 0; i < 4; i++) {
    const int row = m0 + ty + 16 * i;
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int col = n0 + tx + 16 * j;
      if (row < m && col < n) c[static_cast<size_t>(row) * n + col] = acc[i][j];
    }
  }
}

// The driver's cuTensorMapEncodeTiled, through the runtime: no -lcuda needed.
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found;
  CB_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
    std::fprintf(stderr, "the driver has no cuTensorMapEncodeTiled\n");
    std::exit(3);
  }
  return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
}

void check_encode(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed for %s: CUresult %d\n", what, static_cast<int>(r));
    std::exit(3);
  }
}

// ANCHOR: bug
// The tensor maps: A is m rows of k floats, pitch_a bytes from one row to the next; B is k rows of
// n floats, pitch_b bytes apart. Each copy moves one tile: BM x BK of A, BK x BN of B. Every
// per-dimension array of a tensor map, the box's too, lists the innermost (contiguous) dimension
// first: columns, then rows.
void make_tensor_maps(CUtensorMap* map_a, CUtensorMap* map_b, float* d_a, size_t pitch_a, float* d_b,
                      size_t pitch_b, int m, int n, int k) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  const cuuint32_t element_strides[2] = {1, 1};  // every element of the box, no skipping

  const cuuint64_t dims_a[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(m)};
  const cuuint64_t pitch_bytes_a[1] = {pitch_a};
  const cuuint32_t box_a[2] = {BK, BM};  // BK columns (along k) by BM rows
  check_encode(encode(map_a, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, d_a, dims_a, pitch_bytes_a, box_a, element_strides,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
               "A");

  const cuuint64_t dims_b[2] = {static_cast<cuuint64_t>(n), static_cast<cuuint64_t>(k)};
  const cuuint64_t pitch_bytes_b[1] = {pitch_b};
  const cuuint32_t box_b[2] = {BN, BK};  // BN columns by BK rows (along k)
  check_encode(encode(map_b, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, d_b, dims_b, pitch_bytes_b, box_b, element_strides,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
               "B");
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int m = static_cast<int>(io.param("m"));
  const int n = static_cast<int>(io.param("n"));
  const int k = static_cast<int>(io.param("k"));
  const float* h_a = io.input<float>("a");
  const float* h_b = io.input<float>("b");
  float* h_c = io.output<float>("c");

  // Pitched rows: a tensor map's row pitch must be a multiple of 16 bytes, whatever k and n are.
  float *d_a, *d_b, *d_c;
  size_t pitch_a, pitch_b;
  CB_CHECK(cudaMallocPitch(&d_a, &pitch_a, k * sizeof(float), m));
  CB_CHECK(cudaMallocPitch(&d_b, &pitch_b, n * sizeof(float), k));
  CB_CHECK(cudaMalloc(&d_c, static_cast<size_t>(m) * n * sizeof(float)));
  CB_CHECK(cudaMemcpy2D(d_a, pitch_a, h_a, k * sizeof(float), k * sizeof(float), m, cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemcpy2D(d_b, pitch_b, h_b, n * sizeof(float), n * sizeof(float), k, cudaMemcpyHostToDevice));

  CUtensorMap map_a, map_b;  // the type is declared 128-byte aligned; the encoder needs 64
  make_tensor_maps(&map_a, &map_b, d_a, pitch_a, d_b, pitch_b, m, n, k);
  const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
  tma_matmul<<<grid, THREADS>>>(map_a, map_b, d_c, m, n, k);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_c, d_c, static_cast<size_t>(m) * n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_a));
  CB_CHECK(cudaFree(d_b));
  CB_CHECK(cudaFree(d_c));
}
