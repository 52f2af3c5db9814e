// ANCHOR: kernel
// Another fix: one sub-histogram per warp in shared memory (8 x 256 counters), so only the 32 lanes
// of a warp ever contend for a counter; a fixed grid of 1024 blocks; the sub-histograms are summed
// before the 256 global atomics of each block.
constexpr int WARPS = BLOCK / 32;

__global__ void histogram(const float* x, unsigned* bins, int n) {
  __shared__ unsigned local[WARPS][BINS];
  for (int e = threadIdx.x; e < WARPS * BINS; e += blockDim.x) local[e / BINS][e % BINS] = 0;
  __syncthreads();
  unsigned* mine = local[threadIdx.x / 32];
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&mine[bin_of(x[i])], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
    unsigned total = 0;
    for (int w = 0; w < WARPS; w++) total += local[w][b];
    if (total) atomicAdd(&bins[b], total);
  }
}

void launch_histogram(const float* x, unsigned* bins, int n) {
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, 1024);
  histogram<<<std::max(blocks, 1), BLOCK>>>(x, bins, n);
}
// ANCHOR_END: kernel
