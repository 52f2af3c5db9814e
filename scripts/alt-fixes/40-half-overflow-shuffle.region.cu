// ANCHOR: bug
// Another fix: float sums, with the tree done in registers. Each thread converts and adds its
// values in a float, each warp adds its 32 sums with shuffles, and the first warp adds the eight
// warp totals.
__global__ void channel_mean(const __half* act, int count, float* mean) {
  __shared__ float warp_total[BLOCK / 32];
  const __half* channel = act + static_cast<size_t>(blockIdx.x) * count;
  const int t = threadIdx.x;
  float acc = 0.0f;
  for (int i = t; i < count; i += BLOCK) acc += __half2float(channel[i]);
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, offset);
  if (t % 32 == 0) warp_total[t / 32] = acc;
  __syncthreads();
  if (t < 32) {
    float total = t < BLOCK / 32 ? warp_total[t] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1)
      total += __shfl_down_sync(0xffffffffu, total, offset);
    if (t == 0) mean[blockIdx.x] = total / count;
  }
}
// ANCHOR_END: bug
