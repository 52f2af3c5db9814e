// 35-dynpar-shared: histogram equalization of `segs` segments of 10-bit samples (0..1023), each
// segment on its own: scan lines of different lengths, say. Segment s has a slot of `cap` samples
// at x[s * cap] and uses the first len = 1 + lens[s] % cap of them (1 to cap); the outputs of the
// rest of its slot are 0. Equalization maps each sample v to (cdf(v) * 1023) / len, where cdf(v)
// counts the segment's samples that are at most v: the segment's values spread over the range.
//
// One block per segment builds its map: a histogram and a scan of it in shared memory. A segment
// may be one sample or 65,536, so the block does not map the samples itself: it launches a child
// grid sized to its own segment (dynamic parallelism, built with -rdc=true), which maps them all.
// Run it plainly and see what happens. Run the check and see what the tool says.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;         // threads of a parent block
constexpr int CHILD_BLOCK = 256;   // threads of a child block
constexpr unsigned BINS = 1024;    // 10-bit samples
constexpr unsigned PER_THREAD = BINS / BLOCK;

// The segment's map from its histogram: map[v] = (cdf(v) * (BINS - 1)) / len. Each thread scans
// PER_THREAD consecutive bins, then the threads' totals are scanned with warp shuffles.
__device__ void build_map(const unsigned* hist, unsigned* map, unsigned len) {
  __shared__ unsigned warp_totals[BLOCK / 32];
  const unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
  unsigned run[PER_THREAD];
  unsigned total = 0;
  for (unsigned k = 0; k < PER_THREAD; k++) run[k] = total += hist[t * PER_THREAD + k];
  unsigned upto = total;  // inclusive scan of the threads' totals across the warp
  for (unsigned o = 1; o < 32; o <<= 1) {
    const unsigned other = __shfl_up_sync(0xffffffffu, upto, o);
    if (lane >= o) upto += other;
  }
  if (lane == 31) warp_totals[warp] = upto;
  __syncthreads();
  if (warp == 0) {
    unsigned w = lane < BLOCK / 32 ? warp_totals[lane] : 0;
    for (unsigned o = 1; o < BLOCK / 32; o <<= 1) {
      const unsigned other = __shfl_up_sync(0xffffffffu, w, o);
      if (lane >= o) w += other;
    }
    if (lane < BLOCK / 32) warp_totals[lane] = w;
  }
  __syncthreads();
  const unsigned before = upto - total + (warp > 0 ? warp_totals[warp - 1] : 0);
  for (unsigned k = 0; k < PER_THREAD; k++) map[t * PER_THREAD + k] = (before + run[k]) * (BINS - 1) / len;
}

// ANCHOR: bug
// A child grid maps one segment's samples through its map, one thread per sample.
__global__ void apply_map(const unsigned* x, unsigned* y, unsigned len, const unsigned* map) {
  const unsigned i = blockIdx.x * CHILD_BLOCK + threadIdx.x;
  if (i < len) y[i] = map[x[i]];
}

// One block per segment: its histogram in shared memory, its map in global memory, in this
// segment's row of `maps`. A child grid may read only global memory of its parent's (a pointer
// into the parent block's shared memory, or into a thread's local memory, means nothing to another
// grid, and the parent block may be gone before the child runs): so the map it reads is in global
// memory. The __syncthreads() before the launch makes every thread's part of the map visible to
// thread 0, and a child grid sees all that its launching thread saw at the launch.
__global__ void equalize_segments(const unsigned* x, const unsigned* lens, unsigned* y, unsigned cap, unsigned* maps) {
  __shared__ unsigned hist[BINS];
  const unsigned s = blockIdx.x, t = threadIdx.x;
  unsigned* map = maps + static_cast<size_t>(s) * BINS;
  const unsigned len = 1 + lens[s] % cap;
  const unsigned* xs = x + static_cast<size_t>(s) * cap;
  for (unsigned b = t; b < BINS; b += BLOCK) hist[b] = 0;
  __syncthreads();
  for (unsigned i = t; i < len; i += BLOCK) atomicAdd(&hist[xs[i]], 1u);
  __syncthreads();
  build_map(hist, map, len);
  __syncthreads();
  if (t == 0)
    apply_map<<<(len + CHILD_BLOCK - 1) / CHILD_BLOCK, CHILD_BLOCK>>>(xs, y + static_cast<size_t>(s) * cap, len, map);
}

// The parent grid, one block per segment, with a map of BINS entries per segment in global memory.
// Each child grid is done before its parent grid is, so the maps are freed (in stream order, after
// the parent grid) only once no child reads them, and the copy back in cb_run sees every segment
// mapped.
void equalize(const unsigned* d_x, const unsigned* d_lens, unsigned* d_y, int segs, int cap) {
  unsigned* d_maps;
  CB_CHECK(cudaMallocAsync(&d_maps, static_cast<size_t>(segs) * BINS * sizeof(unsigned), 0));
  equalize_segments<<<segs, BLOCK>>>(d_x, d_lens, d_y, static_cast<unsigned>(cap), d_maps);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaFreeAsync(d_maps, 0));
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int segs = static_cast<int>(io.param("segs"));
  const int cap = static_cast<int>(io.param("cap"));
  if (segs < 1 || segs > 2048 || cap < 1) {
    // Each parent block makes one device-side launch; 2048 is the device runtime's default limit on
    // launches waiting to run.
    std::fprintf(stderr, "35-dynpar-shared: segs = %d must lie in 1..=2048, cap = %d at least 1\n", segs, cap);
    std::exit(2);
  }
  const size_t count = static_cast<size_t>(segs) * cap;
  unsigned *d_x, *d_lens, *d_y;
  CB_CHECK(cudaMalloc(&d_x, count * sizeof(unsigned)));
  CB_CHECK(cudaMalloc(&d_lens, segs * sizeof(unsigned)));
  CB_CHECK(cudaMalloc(&d_y, count * sizeof(unsigned)));
  CB_CHECK(cudaMemcpy(d_x, io.input<unsigned>("x"), count * sizeof(unsigned), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemcpy(d_lens, io.input<unsigned>("lens"), segs * sizeof(unsigned), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemset(d_y, 0, count * sizeof(unsigned)));  // the unused ends of the slots
  equalize(d_x, d_lens, d_y, segs, cap);
  CB_CHECK(cudaMemcpy(io.output<unsigned>("y"), d_y, count * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_lens));
  CB_CHECK(cudaFree(d_y));
}
