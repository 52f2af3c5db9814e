// 43-wgmma-kstep: C = A * B on Hopper's tensor cores with warpgroup MMA (wgmma, sm_90a), f16 inputs
// and f32 accumulation.
//
// One warpgroup (4 warps, 128 threads) computes a BM x BN = 64 x 32 tile of C. Per step along k it
// converts a 64 x 64 tile of A and a 64 x 32 tile of B from f32 to f16 into shared memory, then
// issues four wgmma.mma_async m64n32k16 instructions, one per 16-column slice of k. A wgmma reads
// its operands from shared memory through 64-bit matrix descriptors, which encode where the operand
// starts and how its 8 x 8 core matrices are laid out (PTX ISA, "Matrix Descriptor Format"):
//
//   bits  0-13  start address                          (byte address in shared memory) >> 4
//   bits 16-29  leading dimension byte offset (LBO)    from one core matrix to the next along K, >> 4
//   bits 32-45  stride dimension byte offset (SBO)     from one core matrix to the next along M (N), >> 4
//   bits 62-63  swizzle mode                           0: none (the "interleaved" layout used here)
//
// The layout, without swizzling, for both operands ("K-major": A as M x K rows, B as N x K rows):
// a core matrix is 8 rows of 8 halves, 16 bytes per row, 128 contiguous bytes. A 16-column slice of
// the tile is its rows' 8-row groups one after another (SBO = 256 bytes), each group holding two core
// matrices, columns 0-7 then 8-15 (LBO = 128 bytes). The tile is its BK / 16 slices one after another:
// a slice of A takes BM * 16 * 2 = 2048 bytes, a slice of B BN * 16 * 2 = 1024 bytes.
// Run it plainly and the product is wrong. No tool says a word: find out why.
#include <cstdint>
#include <cuda_fp16.h>
#include "cudabugs.cuh"

constexpr int BM = 64;  // rows of C per block: one m64 wgmma
constexpr int BN = 32;  // columns of C per block: n32
constexpr int BK = 64;  // columns of A (rows of B) per step: four k16 slices
constexpr int THREADS = 128;  // one warpgroup

// Where element (r, c) of a K-major tile with `rows` rows (r < rows, c < BK) sits, in halves.
__device__ __forceinline__ int tile_offset(int r, int c, int rows) {
  return (c / 16) * (rows * 16)   // the 16-column slice: rows * 16 halves
         + (r / 8) * 128          // the 8-row group inside the slice: SBO = 256 bytes
         + (c % 16) / 8 * 64      // the core matrix of the group, columns 0-7 or 8-15: LBO = 128 bytes
         + (r % 8) * 8            // the row inside the core matrix: 16 bytes
         + c % 8;                 // the column: 2 bytes
}

// The descriptor of a no-swizzle K-major operand starting at p (16-byte aligned shared memory).
__device__ __forceinline__ uint64_t matrix_descriptor(const __half* p) {
  const uint64_t address = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  const uint64_t lbo = 128, sbo = 256;
  return ((address & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32);
}

// The warpgroup's wgmma instructions. nvcc -arch=sm_90a also embeds generic compute_90 PTX, which
// cannot hold them: they are compiled in the sm_90a pass only (__CUDA_ARCH_FEAT_SM90_ALL), and the
// generic code, which a Hopper GPU never runs (it loads the sm_90a machine code), traps instead.
__device__ __forceinline__ void wgmma_fence() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_commit_and_wait() {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#endif
}

// d += A (64 x 16, descriptor a) * B (16 x 32, descriptor b): one wgmma of the warpgroup.
__device__ __forceinline__ void wgmma_m64n32k16(float (&d)[16], uint64_t a, uint64_t b) {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, 1, 0;\n"  // scale-d true: accumulate into d
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "%16, %17, p, 1, 1, 0, 0;\n"  // A and B scaled by +1, neither transposed (both K-major)
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(a), "l"(b)
      : "memory");
#else
  __trap();
#endif
}

__global__ void __launch_bounds__(THREADS) wgmma_gemm(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ alignas(128) __half sa[BM * BK];  // A tile: BK / 16 slices of 64 x 16
  __shared__ alignas(128) __half sb[BN * BK];  // B tile, K-major (B transposed): BK / 16 slices of 32 x 16
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const uint64_t desc_a = matrix_descriptor(sa);
  const uint64_t desc_b = matrix_descriptor(sb);
  float acc[16] = {};

  for (int k0 = 0; k0 < k; k0 += BK) {
    // Stage the tiles as f16, zeros past the matrices' edges. Consecutive threads read consecutive
    // floats of a row of A (along k) and of a row of B (along n).
    for (int i = threadIdx.x; i < BM * BK; i += THREADS) {
      const int r = i / BK, col = i % BK;
      const float v = m0 + r < m && k0 + col < k ? a[static_cast<size_t>(m0 + r) * k + k0 + col] : 0.0f;
      sa[tile_offset(r, col, BM)] = __float2half_rn(v);
    }
    for (int i = threadIdx.x; i < BN * BK; i += THREADS) {
      const int row = i / BN, col = i % BN;  // element (row, col) of B's tile is (col, row) of the K-major one
      const float v = k0 + row < k && n0 + col < n ? b[static_cast<size_t>(k0 + row) * n + n0 + col] : 0.0f;
      sb[tile_offset(col, row, BN)] = __float2half_rn(v);
    }
    // The tensor cores read shared memory through the async proxy: make the stores visible to it.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();

    wgmma_fence();  // the accumulators are the wgmmas' from here on
    // ANCHOR: bug
    // One wgmma per 16-column slice of the tile: move both descriptors along k to the slice.
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wgmma_m64n32k16(acc, desc_a + kk, desc_b + kk);
    }
    // ANCHOR_END: bug
    wgmma_commit_and_wait();  // the four wgmmas run asynchronously: wait for them
    __syncthreads();  // every warp's wgmmas have read the tiles before the next step overwrites them
  }

  // The accumulator layout of m64nNk16: warp w holds rows 16 w .. 16 w + 15; register i of lane l
  // is row 16 w + l / 4 + 8 * ((i / 2) % 2), column 8 * (i / 4) + 2 * (l % 4) + i % 2.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int i = 0; i < 16; i++) {
    const int row = m0 + 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
    const int col = n0 + 8 * (i / 4) + 2 * (lane % 4) + i % 2;
    if (row < m && col < n) c[static_cast<size_t>(row) * n + col] = acc[i];
  }
}

void cb_run(cb::Io& io) {
  const int m = static_cast<int>(io.param("m"));
  const int n = static_cast<int>(io.param("n"));
  const int k = static_cast<int>(io.param("k"));
  const float* h_a = io.input<float>("a");
  const float* h_b = io.input<float>("b");
  float* h_c = io.output<float>("c");

  float *d_a, *d_b, *d_c;
  CB_CHECK(cudaMalloc(&d_a, static_cast<size_t>(m) * k * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_b, static_cast<size_t>(k) * n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_c, static_cast<size_t>(m) * n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_a, h_a, static_cast<size_t>(m) * k * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemcpy(d_b, h_b, static_cast<size_t>(k) * n * sizeof(float), cudaMemcpyHostToDevice));
  const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
  wgmma_gemm<<<grid, THREADS>>>(d_a, d_b, d_c, m, n, k);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_c, d_c, static_cast<size_t>(m) * n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_a));
  CB_CHECK(cudaFree(d_b));
  CB_CHECK(cudaFree(d_c));
}
