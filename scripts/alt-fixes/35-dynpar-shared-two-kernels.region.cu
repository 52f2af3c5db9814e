// ANCHOR: bug
// Another fix: no child grids. The host launches two grids one after another: one block per
// segment builds the segment's map in global memory, then a row of blocks per segment maps the
// samples (a thread past its segment's length leaves its 0). The end of the first grid orders the
// maps before every read of them. The work is no longer sized to each segment: the second grid
// covers every slot, used or not.
__global__ void build_maps(const unsigned* x, const unsigned* lens, unsigned cap, unsigned* maps) {
  __shared__ unsigned hist[BINS];
  const unsigned s = blockIdx.x, t = threadIdx.x;
  const unsigned len = 1 + lens[s] % cap;
  const unsigned* xs = x + static_cast<size_t>(s) * cap;
  for (unsigned b = t; b < BINS; b += BLOCK) hist[b] = 0;
  __syncthreads();
  for (unsigned i = t; i < len; i += BLOCK) atomicAdd(&hist[xs[i]], 1u);
  __syncthreads();
  build_map(hist, maps + static_cast<size_t>(s) * BINS, len);
}

// Block (bx, s) maps samples bx * CHILD_BLOCK ... of segment s.
__global__ void apply_maps(const unsigned* x, const unsigned* lens, unsigned* y, unsigned cap, const unsigned* maps) {
  const unsigned s = blockIdx.y;
  const unsigned i = blockIdx.x * CHILD_BLOCK + threadIdx.x;
  const size_t at = static_cast<size_t>(s) * cap + i;
  if (i < 1 + lens[s] % cap) y[at] = maps[static_cast<size_t>(s) * BINS + x[at]];
}

void equalize(const unsigned* d_x, const unsigned* d_lens, unsigned* d_y, int segs, int cap) {
  unsigned* d_maps;
  CB_CHECK(cudaMallocAsync(&d_maps, static_cast<size_t>(segs) * BINS * sizeof(unsigned), 0));
  build_maps<<<segs, BLOCK>>>(d_x, d_lens, static_cast<unsigned>(cap), d_maps);
  CB_CHECK(cudaGetLastError());
  const dim3 grid((cap + CHILD_BLOCK - 1) / CHILD_BLOCK, segs);
  apply_maps<<<grid, CHILD_BLOCK>>>(d_x, d_lens, d_y, static_cast<unsigned>(cap), d_maps);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaFreeAsync(d_maps, 0));
}
// ANCHOR_END: bug
