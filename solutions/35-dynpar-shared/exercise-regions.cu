// 35-dynpar-shared: the marked region of the untouched exercises/35-dynpar-shared/equalize.cu:
// `reset` restores it, `list` compares against it and the book shows it.
// ANCHOR: bug
// A child grid maps one segment's samples through its map, one thread per sample.
__global__ void apply_map(const unsigned* x, unsigned* y, unsigned len, const unsigned* map) {
  const unsigned i = blockIdx.x * CHILD_BLOCK + threadIdx.x;
  if (i < len) y[i] = map[x[i]];
}

// One block per segment: its histogram and its map in shared memory (one array, the histogram
// first), then thread 0 launches the child grid that maps the segment, handing it the map.
__global__ void equalize_segments(const unsigned* x, const unsigned* lens, unsigned* y, unsigned cap) {
  __shared__ unsigned table[2 * BINS];
  unsigned* hist = table;
  unsigned* map = table + BINS;
  const unsigned s = blockIdx.x, t = threadIdx.x;
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

// The parent grid, one block per segment. Each child grid is done before its parent grid is, so the
// copy back in cb_run sees every segment mapped.
void equalize(const unsigned* d_x, const unsigned* d_lens, unsigned* d_y, int segs, int cap) {
  equalize_segments<<<segs, BLOCK>>>(d_x, d_lens, d_y, static_cast<unsigned>(cap));
  CB_CHECK(cudaGetLastError());
}
// ANCHOR_END: bug
