// 20-stream-free: the marked regions of the untouched exercises/20-stream-free/streams.cu. The pristine exercise is
// solutions/20-stream-free/streams.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
__global__ void two_x_plus_one(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2.0f * x[i] + 1.0f;
}

// Upload h_x on `copy`, transform it into d_y on `compute`. Returns without waiting for either.
void transform(const float* h_x, float* d_y, int n, cudaStream_t copy, cudaStream_t compute) {
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);
  float* d_x;
  CB_CHECK(cudaMallocAsync(&d_x, n * sizeof(float), copy));
  CB_CHECK(cudaMemcpyAsync(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice, copy));
  cudaEvent_t uploaded;
  CB_CHECK(cudaEventCreateWithFlags(&uploaded, cudaEventDisableTiming));
  CB_CHECK(cudaEventRecord(uploaded, copy));
  CB_CHECK(cudaStreamWaitEvent(compute, uploaded));  // the kernel starts after the upload
  two_x_plus_one<<<blocks, BLOCK, 0, compute>>>(d_x, d_y, n);
  CB_CHECK(cudaGetLastError());
  // The input is queued for the kernel: give it back to the pool, on the stream that allocated it.
  CB_CHECK(cudaFreeAsync(d_x, copy));
  CB_CHECK(cudaEventDestroy(uploaded));
}
// ANCHOR_END: bug
