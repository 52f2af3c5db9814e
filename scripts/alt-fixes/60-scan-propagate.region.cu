// ANCHOR: kernel
// Another fix: scan, then propagate, with warp shuffles and no staged tile. scan_tiles scans each
// tile of 2048 values in registers (8 coalesced rounds of 256, each scanned across its warp with
// shuffles; the 64 warp totals scanned by one warp), writes the tile's own scan to y and its total
// to tmp; scan_tile_sums turns the totals into offsets; add_tile_sums adds each tile's offset to
// its part of y. Each value crosses DRAM four times (x read, y written, read and written again)
// instead of the reduce-then-scan fix's three.
constexpr int ROUNDS = 8, TILE = BLOCK * ROUNDS, WARPS = BLOCK / 32;
constexpr int SUM_THREADS = 1024, SUM_ITEMS = 4;
static_assert(ROUNDS * WARPS == 64, "one warp scans the 64 warp totals, two per lane");

__device__ float warp_scan(float v) {
  const int lane = threadIdx.x % 32;
  for (int d = 1; d < 32; d *= 2) {
    const float u = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += u;
  }
  return v;
}

__global__ void scan_tiles(const float* x, float* y, float* sums, int n) {
  __shared__ float offsets[ROUNDS * WARPS];  // offsets[r * WARPS + w]: round r, warp w
  const int base = blockIdx.x * TILE, t = threadIdx.x, lane = t % 32, warp = t / 32;
  float v[ROUNDS];
#pragma unroll
  for (int r = 0; r < ROUNDS; r++) {
    const int i = base + r * BLOCK + t;
    v[r] = i < n ? x[i] : 0.0f;
  }
#pragma unroll
  for (int r = 0; r < ROUNDS; r++) {
    v[r] = warp_scan(v[r]);
    if (lane == 31) offsets[r * WARPS + warp] = v[r];
  }
  __syncthreads();
  if (warp == 0) {
    const float a = offsets[2 * lane], b = offsets[2 * lane + 1];
    const float inclusive = warp_scan(a + b);
    float before = __shfl_up_sync(0xffffffffu, inclusive, 1);
    if (lane == 0) before = 0.0f;
    offsets[2 * lane] = before;
    offsets[2 * lane + 1] = before + a;
    if (lane == 31) sums[blockIdx.x] = inclusive;
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < ROUNDS; r++) {
    const int i = base + r * BLOCK + t;
    if (i < n) y[i] = v[r] + offsets[r * WARPS + warp];
  }
}

// One block: the tiles' totals become their offsets (an exclusive scan), 4096 at a time.
__global__ void scan_tile_sums(float* sums, int tiles) {
  __shared__ float warp_offsets[SUM_THREADS / 32];
  __shared__ float chunk;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float carry = 0.0f;
  for (int base = 0; base < tiles; base += SUM_THREADS * SUM_ITEMS) {
    const int first = base + threadIdx.x * SUM_ITEMS;
    float v[SUM_ITEMS], own = 0.0f;
#pragma unroll
    for (int k = 0; k < SUM_ITEMS; k++) {
      v[k] = first + k < tiles ? sums[first + k] : 0.0f;
      own += v[k];
    }
    const float inclusive = warp_scan(own);
    if (lane == 31) warp_offsets[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
      const float total = warp_scan(warp_offsets[lane]);
      float before = __shfl_up_sync(0xffffffffu, total, 1);
      if (lane == 0) before = 0.0f;
      warp_offsets[lane] = before;
      if (lane == 31) chunk = total;
    }
    __syncthreads();
    float prefix = carry + warp_offsets[warp] + (inclusive - own);
#pragma unroll
    for (int k = 0; k < SUM_ITEMS; k++) {
      if (first + k < tiles) sums[first + k] = prefix;
      prefix += v[k];
    }
    carry += chunk;
    __syncthreads();  // the next chunk writes warp_offsets and chunk again
  }
}

__global__ void add_tile_sums(float* y, const float* offsets, int n) {
  const float offset = offsets[blockIdx.x];
#pragma unroll
  for (int r = 0; r < ROUNDS; r++) {
    const int i = blockIdx.x * TILE + r * BLOCK + threadIdx.x;
    if (i < n) y[i] += offset;
  }
}

void launch_scan(const float* x, float* y, float* tmp, int n) {
  if (n <= 0) return;
  const int tiles = (n + TILE - 1) / TILE;
  scan_tiles<<<tiles, BLOCK>>>(x, y, tmp, n);
  scan_tile_sums<<<1, SUM_THREADS>>>(tmp, tiles);
  add_tile_sums<<<tiles, BLOCK>>>(y, tmp, n);
}
// ANCHOR_END: kernel
