// 63-transfers: the marked region of the untouched exercises/63-transfers/cool.cu: `reset` restores it, `list`
// compares against it and the book shows it.
// ANCHOR: pipeline
// One thread per body. At the timed run's 2560 steps the kernel takes about as long on the SMs as
// the copies of the temperatures over PCIe.
__global__ void cool(const float* x, float* y, size_t n, int steps) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = cool_for(x[i], steps);
}

// Copy every temperature to the GPU, cool them all, copy every result back. The host buffers are
// pinned (the harness allocates them with cudaMallocHost), so each copy runs at full PCIe speed.
void cool_on_gpu(const float* h_x, float* h_y, size_t n, int steps) {
  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  if (n > 0) cool<<<static_cast<unsigned>((n + BLOCK - 1) / BLOCK), BLOCK>>>(d_x, d_y, n, steps);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
// ANCHOR_END: pipeline
