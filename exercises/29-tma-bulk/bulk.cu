// 29-tma-bulk: y = x * x + 1 over a long vector, staged through shared memory by the Tensor Memory
// Accelerator (TMA, Hopper, sm_90).
//
// Per tile of TILE floats, one thread starts a single bulk copy (cp.async.bulk) from global into
// shared memory; the copy engine moves the 16 KB on its own and signals an mbarrier
// (cuda::barrier) when the bytes have arrived, while the other threads wait at the same barrier.
// Then every thread transforms its share of the tile. A bulk copy moves a multiple of 16 bytes
// between 16-byte aligned addresses.
#include <algorithm>
#include <cuda/barrier>
#include <utility>
#include "cudabugs.cuh"

using barrier = cuda::barrier<cuda::thread_scope_block>;
namespace cde = cuda::device::experimental;

constexpr int BLOCK = 256;
constexpr int TILE = 4096;  // floats per tile: 16 KB, one bulk copy
constexpr int MAX_BLOCKS = 264;

__global__ void square_plus_one(const float* x, float* y, int n) {
  __shared__ alignas(16) float tile[TILE];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ barrier bar;
  if (threadIdx.x == 0) {
    init(&bar, blockDim.x);                // every thread of the block arrives once per tile
    cde::fence_proxy_async_shared_cta();   // make the initialised barrier visible to the copy engine
  }
  __syncthreads();

  const int tiles = (n + TILE - 1) / TILE;
  for (int k = blockIdx.x; k < tiles; k += gridDim.x) {
    const int base = k * TILE;
    const int len = min(TILE, n - base);  // the last tile may be partial
    barrier::arrival_token token;
    // ANCHOR: bug
    if (threadIdx.x == 0) {
      // One copy of the tile; the barrier expects its bytes as well as the block's arrivals.
      cde::cp_async_bulk_global_to_shared(tile, x + base, sizeof(tile), bar);
      token = cuda::device::barrier_arrive_tx(bar, 1, sizeof(tile));
    } else {
      token = bar.arrive();
    }
    bar.wait(std::move(token));
    for (int j = threadIdx.x; j < len; j += blockDim.x) y[base + j] = tile[j] * tile[j] + 1.0f;
    // ANCHOR_END: bug
    __syncthreads();  // everyone has read the tile before the next copy overwrites it
  }
}

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");
  const int blocks = std::max(1, std::min((n + TILE - 1) / TILE, MAX_BLOCKS));

  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  square_plus_one<<<blocks, BLOCK>>>(d_x, d_y, n);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
