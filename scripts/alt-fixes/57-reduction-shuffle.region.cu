// ANCHOR: kernel
// Another fix: no shared memory tree and no float4. Each thread adds a grid-stride slice of floats
// (a fixed grid of 2048 blocks), warps finish with shuffles, one atomicAdd per warp.
__global__ void sum(const float* x, float* total, int n) {
  float acc = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) acc += x[i];
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, offset);
  if (threadIdx.x % 32 == 0) atomicAdd(total, acc);
}

void launch_sum(const float* x, float* total, int n) {
  if (n > 0) sum<<<std::min((n + BLOCK - 1) / BLOCK, 2048), BLOCK>>>(x, total, n);
}
// ANCHOR_END: kernel
