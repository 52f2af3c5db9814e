// ANCHOR: pipeline
// A half-fix: the clearing is now a cudaMemsetAsync, but with no stream argument, and the stream
// argument defaults to 0: the legacy default stream, as before. "Async" says the call may return
// before the memset is done; it says nothing about which stream the memset joins. Each chunk's
// clearing still waits for every chunk before it and holds up every chunk after it, and the call
// takes as long as the original's.
void periods_on_gpu(const float* h_a, float* h_y, size_t n) {
  float *d_a, *d_y;
  CB_CHECK(cudaMalloc(&d_a, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  cudaStream_t streams[STREAMS];
  for (cudaStream_t& s : streams) CB_CHECK(cudaStreamCreate(&s));
  const size_t chunk = (n + CHUNKS - 1) / CHUNKS;
  for (size_t first = 0, c = 0; first < n; first += chunk, c++) {
    const size_t len = std::min(chunk, n - first);
    const cudaStream_t s = streams[c % STREAMS];
    CB_CHECK(cudaMemsetAsync(d_y + first, 0, len * sizeof(float)));
    CB_CHECK(cudaMemcpyAsync(d_a + first, h_a + first, len * sizeof(float), cudaMemcpyHostToDevice, s));
    pendulum_period<<<static_cast<unsigned>((len + BLOCK - 1) / BLOCK), BLOCK, 0, s>>>(d_a + first, d_y + first, len, NODES);
    CB_CHECK(cudaGetLastError());
    CB_CHECK(cudaMemcpyAsync(h_y + first, d_y + first, len * sizeof(float), cudaMemcpyDeviceToHost, s));
  }
  // Every chunk's copy out is done before the call returns and the buffers are freed.
  for (cudaStream_t s : streams) {
    CB_CHECK(cudaStreamSynchronize(s));
    CB_CHECK(cudaStreamDestroy(s));
  }
  CB_CHECK(cudaFree(d_a));
  CB_CHECK(cudaFree(d_y));
}
// ANCHOR_END: pipeline
