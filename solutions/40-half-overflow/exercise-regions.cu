// 40-half-overflow: the marked regions of the untouched exercises/40-half-overflow/bnstats.cu. The pristine exercise is
// solutions/40-half-overflow/bnstats.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// One block per channel: the mean of its `count` values.
__global__ void channel_mean(const __half* act, int count, float* mean) {
  __shared__ __half s[BLOCK];
  const __half* channel = act + static_cast<size_t>(blockIdx.x) * count;
  const int t = threadIdx.x;
  __half acc = __float2half(0.0f);
  for (int i = t; i < count; i += BLOCK) acc = __hadd(acc, channel[i]);
  s[t] = acc;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] = __hadd(s[t], s[t + stride]);
    __syncthreads();
  }
  if (t == 0) mean[blockIdx.x] = __half2float(s[0]) / count;
}
// ANCHOR_END: bug
