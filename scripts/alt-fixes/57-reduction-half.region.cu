// ANCHOR: kernel
// A half-fix: sequential addressing. At each step the first `stride` threads add s[t + stride]:
// no divergence inside warps and no bank conflicts, but still one value per thread, a tree of 8
// barriers for every 256 values, and one atomicAdd per 256 values.
__global__ void sum(const float* x, float* total, int n) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) atomicAdd(total, s[0]);
}

void launch_sum(const float* x, float* total, int n) {
  if (n > 0) sum<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, total, n);
}
// ANCHOR_END: kernel
