// 30-mbarrier-count: the dot product of two long vectors, tiles of both staged by TMA (Hopper, sm_90).
//
// Per tile, one thread starts two bulk copies (cp.async.bulk), TILE floats of a and of b, onto one
// mbarrier (cuda::barrier in shared memory). An mbarrier completes a phase when the expected number
// of arrivals has arrived and the expected bytes have landed: barrier_arrive_tx is the copying
// thread's arrival plus the byte count it expects. Every thread then multiplies and adds its share
// of the tile; a block adds its total to the result once.
#include <algorithm>
#include <cuda/barrier>
#include <utility>
#include "cudabugs.cuh"

using barrier = cuda::barrier<cuda::thread_scope_block>;
namespace cde = cuda::device::experimental;

constexpr int BLOCK = 256;
constexpr int TILE = 2048;  // floats of a and of b per tile: 8 KB each
constexpr int MAX_BLOCKS = 264;

__global__ void dot(const float* a, const float* b, float* result, int n) {
  __shared__ alignas(16) float ta[TILE];
  __shared__ alignas(16) float tb[TILE];
  __shared__ float warp_sums[BLOCK / 32];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ barrier bar;
  // ANCHOR: bug
  if (threadIdx.x == 0) {
    // Every thread of the block arrives once per tile, and one more arrival stands for the copies.
    init(&bar, blockDim.x + 1);
    cde::fence_proxy_async_shared_cta();  // make the initialised barrier visible to the copy engine
  }
  __syncthreads();

  float acc = 0.0f;
  const int tiles = (n + TILE - 1) / TILE;
  for (int k = blockIdx.x; k < tiles; k += gridDim.x) {
    const int base = k * TILE;
    const int len = min(TILE, n - base);
    const int bulk = len / 4 * 4;  // whole 16-byte groups go by TMA, the last 0-3 floats by loads
    barrier::arrival_token token;
    if (threadIdx.x == 0 && bulk > 0) {
      cde::cp_async_bulk_global_to_shared(ta, a + base, bulk * sizeof(float), bar);
      cde::cp_async_bulk_global_to_shared(tb, b + base, bulk * sizeof(float), bar);
      token = cuda::device::barrier_arrive_tx(bar, 1, 2 * bulk * sizeof(float));
    } else {
      token = bar.arrive();
    }
    bar.wait(std::move(token));  // every arrival and every byte of the tile is in
    // ANCHOR_END: bug
    for (int j = threadIdx.x; j < len; j += blockDim.x) acc += j < bulk ? ta[j] * tb[j] : a[base + j] * b[base + j];
    __syncthreads();  // everyone has read the tile before the next copies overwrite it
  }

  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < BLOCK / 32; w++) total += warp_sums[w];
    atomicAdd(result, total);
  }
}

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const float* h_a = io.input<float>("a");
  const float* h_b = io.input<float>("b");
  float* h_dot = io.output<float>("dot");
  const int blocks = std::max(1, std::min((n + TILE - 1) / TILE, MAX_BLOCKS));

  float *d_a, *d_b, *d_dot;
  CB_CHECK(cudaMalloc(&d_a, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_b, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_dot, sizeof(float)));
  CB_CHECK(cudaMemcpy(d_a, h_a, n * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemcpy(d_b, h_b, n * sizeof(float), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemset(d_dot, 0, sizeof(float)));
  dot<<<blocks, BLOCK>>>(d_a, d_b, d_dot, n);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_dot, d_dot, sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_a));
  CB_CHECK(cudaFree(d_b));
  CB_CHECK(cudaFree(d_dot));
}
