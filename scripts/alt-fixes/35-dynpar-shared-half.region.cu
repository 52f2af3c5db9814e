// ANCHOR: bug
// A half-fix: the map moves out of shared memory into global memory, as a child grid needs, but into
// one `__device__` array that every parent block shares. The blocks run at the same time, and each
// writes its segment's map over the others'; a child grid starts some microseconds after its launch,
// by when the last block to write has written. Every segment is mapped through about the same,
// wrong map: the cases with several segments fail. The pointer is legal now; what it points to is
// not this segment's. Each segment needs a map of its own.
__device__ unsigned common_map[BINS];

__global__ void apply_map(const unsigned* x, unsigned* y, unsigned len, const unsigned* map) {
  const unsigned i = blockIdx.x * CHILD_BLOCK + threadIdx.x;
  if (i < len) y[i] = map[x[i]];
}

__global__ void equalize_segments(const unsigned* x, const unsigned* lens, unsigned* y, unsigned cap) {
  __shared__ unsigned hist[BINS];
  const unsigned s = blockIdx.x, t = threadIdx.x;
  const unsigned len = 1 + lens[s] % cap;
  const unsigned* xs = x + static_cast<size_t>(s) * cap;
  for (unsigned b = t; b < BINS; b += BLOCK) hist[b] = 0;
  __syncthreads();
  for (unsigned i = t; i < len; i += BLOCK) atomicAdd(&hist[xs[i]], 1u);
  __syncthreads();
  build_map(hist, common_map, len);
  __syncthreads();
  if (t == 0)
    apply_map<<<(len + CHILD_BLOCK - 1) / CHILD_BLOCK, CHILD_BLOCK>>>(xs, y + static_cast<size_t>(s) * cap, len, common_map);
}

void equalize(const unsigned* d_x, const unsigned* d_lens, unsigned* d_y, int segs, int cap) {
  equalize_segments<<<segs, BLOCK>>>(d_x, d_lens, d_y, static_cast<unsigned>(cap));
  CB_CHECK(cudaGetLastError());
}
// ANCHOR_END: bug
