// 57-reduction: the marked region of the untouched exercises/57-reduction/sum.cu: `reset` restores it, `list`
// compares against it and the book shows it.
// ANCHOR: kernel
__global__ void sum(const float* x, float* total, int n) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  // Interleaved pairs: at step `stride`, thread t (a multiple of 2 * stride) adds s[t + stride].
  for (int stride = 1; stride < BLOCK; stride *= 2) {
    if (t % (2 * stride) == 0) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) atomicAdd(total, s[0]);
}

void launch_sum(const float* x, float* total, int n) {
  if (n > 0) sum<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, total, n);
}
// ANCHOR_END: kernel
