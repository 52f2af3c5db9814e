// ANCHOR: kernel
// A half-fix: one block per SM, so every SM has work, but only 4 warps each: too few loads in flight
// to cover the memory latency.
__global__ void affine(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2.0f * x[i] + 1.0f;
}

void launch_affine(const float* x, float* y, int n) {
  int device, sms;
  CB_CHECK(cudaGetDevice(&device));
  CB_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  affine<<<sms, 128>>>(x, y, n);
}
// ANCHOR_END: kernel
