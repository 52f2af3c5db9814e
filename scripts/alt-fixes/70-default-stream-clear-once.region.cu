// ANCHOR: pipeline
// Another fix: all of d_y is cleared once, before the pipeline, and each chunk then has a copy in, a
// kernel and a copy out in its stream. The one cudaMemset still runs on the legacy default stream,
// and still waits for every stream made with cudaStreamCreate and holds them up; but nothing was
// queued before it, and its hold-up is its own time, a fraction of a millisecond, once per call
// rather than once per chunk between the chunks. Only a default-stream operation in the middle of
// the pipeline cuts it into pieces.
void periods_on_gpu(const float* h_a, float* h_y, size_t n) {
  float *d_a, *d_y;
  CB_CHECK(cudaMalloc(&d_a, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  cudaStream_t streams[STREAMS];
  for (cudaStream_t& s : streams) CB_CHECK(cudaStreamCreate(&s));
  CB_CHECK(cudaMemset(d_y, 0, n * sizeof(float)));  // once: every stream's work waits for it
  const size_t chunk = (n + CHUNKS - 1) / CHUNKS;
  for (size_t first = 0, c = 0; first < n; first += chunk, c++) {
    const size_t len = std::min(chunk, n - first);
    const cudaStream_t s = streams[c % STREAMS];
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
