// ANCHOR: bug
// A half-fix: the tree adds floats, so the total no longer overflows, but each thread still adds
// its own values in half precision. A thread's sum that reaches 2048 stops growing: there the
// halves are 2 apart, and 2048 + x rounds back to 2048 for every x below 1. With 2^21 values per
// channel each thread adds 8192 values, about 4096 in all, and stops at 2048: the mean comes out
// near 0.25 instead of 0.5.
__global__ void channel_mean(const __half* act, int count, float* mean) {
  __shared__ float s[BLOCK];
  const __half* channel = act + static_cast<size_t>(blockIdx.x) * count;
  const int t = threadIdx.x;
  __half acc = __float2half(0.0f);
  for (int i = t; i < count; i += BLOCK) acc = __hadd(acc, channel[i]);
  s[t] = __half2float(acc);
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) mean[blockIdx.x] = s[0] / count;
}
// ANCHOR_END: bug
