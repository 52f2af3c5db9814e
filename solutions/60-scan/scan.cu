// 60-scan: the inclusive prefix sum of n floats, y[i] = x[0] + x[1] + ... + x[i], as Hillis and
// Steele wrote it for a machine with one processor per element: pass d adds to every element the
// one d places before it, for d = 1, 2, 4, ... below n.
//
// The answer is right (to float rounding). It is slow: count the passes, and the bytes each one
// moves through DRAM, against what a scan must move (read x once, write y once).
//
// `check` times the kernels that exercise.toml's [timing] names: scan_pass, tile_sums,
// scan_tile_sums, scan_tiles and add_tile_sums. Give your kernels names from that list.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

// ANCHOR: kernel
// Reduce, then scan: three kernels that move each value through DRAM three times (x read twice, y
// written once), however large n is. A tile is 2048 values: 256 threads with 8 each.
//  1. tile_sums: each block adds up its tile and writes the total to tmp[tile].
//  2. scan_tile_sums: one block turns the totals into each tile's offset (an exclusive scan).
//  3. scan_tiles: each block scans its tile, 8 consecutive values per thread in registers and the
//     threads' sums scanned with warp shuffles, adds the tile's offset and writes y.
constexpr int ITEMS = 8, TILE = BLOCK * ITEMS;
constexpr int SUM_THREADS = 1024, SUM_ITEMS = 4;

// Inclusive scan across the 32 lanes of a warp.
__device__ float warp_scan(float v) {
  const int lane = threadIdx.x % 32;
  for (int d = 1; d < 32; d *= 2) {
    const float u = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += u;
  }
  return v;
}

// Exclusive scan of one value per thread across a block of THREADS; *total gets the block's sum.
template <int THREADS>
__device__ float block_exclusive_scan(float v, float* total) {
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "one warp scans the warps' totals");
  __shared__ float warp_offsets[THREADS / 32];
  __shared__ float sum;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const float inclusive = warp_scan(v);
  float exclusive = __shfl_up_sync(0xffffffffu, inclusive, 1);
  if (lane == 0) exclusive = 0.0f;
  if (lane == 31) warp_offsets[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    const float t = lane < THREADS / 32 ? warp_offsets[lane] : 0.0f;
    const float s = warp_scan(t);
    float before = __shfl_up_sync(0xffffffffu, s, 1);
    if (lane == 0) before = 0.0f;
    if (lane < THREADS / 32) warp_offsets[lane] = before;
    if (lane == 31) sum = s;
  }
  __syncthreads();
  exclusive += warp_offsets[warp];
  *total = sum;
  __syncthreads();  // the next call writes warp_offsets and sum again
  return exclusive;
}

__global__ void tile_sums(const float* x, float* sums, int n) {
  const int base = blockIdx.x * TILE;
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < ITEMS; k++) {
    const int i = base + k * BLOCK + threadIdx.x;  // coalesced: the order of a sum is free
    if (i < n) acc += x[i];
  }
  float total;
  block_exclusive_scan<BLOCK>(acc, &total);
  if (threadIdx.x == 0) sums[blockIdx.x] = total;
}

// One block: the tiles' totals become their offsets, 4096 at a time with a running carry.
__global__ void scan_tile_sums(float* sums, int tiles) {
  float carry = 0.0f;
  for (int base = 0; base < tiles; base += SUM_THREADS * SUM_ITEMS) {
    const int first = base + threadIdx.x * SUM_ITEMS;
    float v[SUM_ITEMS], own = 0.0f;
#pragma unroll
    for (int k = 0; k < SUM_ITEMS; k++) {
      v[k] = first + k < tiles ? sums[first + k] : 0.0f;
      own += v[k];
    }
    float chunk;
    float prefix = carry + block_exclusive_scan<SUM_THREADS>(own, &chunk);
#pragma unroll
    for (int k = 0; k < SUM_ITEMS; k++) {
      if (first + k < tiles) sums[first + k] = prefix;
      prefix += v[k];
    }
    carry += chunk;
  }
}

__global__ void scan_tiles(const float* x, const float* offsets, float* y, int n) {
  // The tile goes through shared memory so that global loads and stores stay coalesced while each
  // thread scans 8 consecutive values. One pad word per 32 keeps the strided accesses (8 words
  // apart) free of bank conflicts.
  __shared__ float s[TILE + TILE / 32];
  const int base = blockIdx.x * TILE, t = threadIdx.x;
#pragma unroll
  for (int k = 0; k < ITEMS; k++) {
    const int j = k * BLOCK + t;
    s[j + j / 32] = base + j < n ? x[base + j] : 0.0f;
  }
  __syncthreads();
  float v[ITEMS], own = 0.0f;
#pragma unroll
  for (int k = 0; k < ITEMS; k++) {
    const int j = t * ITEMS + k;
    v[k] = s[j + j / 32];
    own += v[k];
  }
  float total;
  float prefix = offsets[blockIdx.x] + block_exclusive_scan<BLOCK>(own, &total);
#pragma unroll
  for (int k = 0; k < ITEMS; k++) {
    const int j = t * ITEMS + k;
    prefix += v[k];
    s[j + j / 32] = prefix;
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < ITEMS; k++) {
    const int j = k * BLOCK + t;
    if (base + j < n) y[base + j] = s[j + j / 32];
  }
}

void launch_scan(const float* x, float* y, float* tmp, int n) {
  if (n <= 0) return;
  const int tiles = (n + TILE - 1) / TILE;  // tmp holds n >= tiles floats
  tile_sums<<<tiles, BLOCK>>>(x, tmp, n);
  scan_tile_sums<<<1, SUM_THREADS>>>(tmp, tiles);
  scan_tiles<<<tiles, BLOCK>>>(x, tmp, y, n);
}
// ANCHOR_END: kernel

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const size_t bytes = std::max(n, 1) * sizeof(float);
  float *d_x, *d_y, *d_tmp;  // tmp: n floats of scratch
  CB_CHECK(cudaMalloc(&d_x, bytes));
  CB_CHECK(cudaMalloc(&d_y, bytes));
  CB_CHECK(cudaMalloc(&d_tmp, bytes));
  CB_CHECK(cudaMemcpy(d_x, io.input<float>("x"), n * sizeof(float), cudaMemcpyHostToDevice));
  launch_scan(d_x, d_y, d_tmp, n);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(io.output<float>("y"), d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
  CB_CHECK(cudaFree(d_tmp));
}
