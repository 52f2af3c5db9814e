// ANCHOR: bug
// A half-fix: two staging buffers, used in turn, and nothing else. Chunk c + 2 now overwrites the
// buffer of chunk c instead of chunk c + 1 overwriting it; but the host queues a chunk in a few tens
// of microseconds while the GPU needs a kernel of about a tenth of a millisecond per chunk before each
// copy, so within a few chunks the host is two chunks ahead of the copies, and from there on every
// copy reads a buffer that already holds a later chunk. Double buffering gives the host room; only
// waiting for the copy keeps it from overwriting what a queued copy has not read.
void upload_and_solve(const float* h_m, float* d_m, float* d_anomaly, int n, cudaStream_t s) {
  float* staging[2];
  for (int b = 0; b < 2; b++) CB_CHECK(cudaMallocHost(&staging[b], CHUNK * sizeof(float)));
  for (int first = 0, c = 0; first < n; first += CHUNK, c++) {
    const int len = std::min(CHUNK, n - first);
    float* buffer = staging[c % 2];
    std::memcpy(buffer, h_m + first, len * sizeof(float));
    CB_CHECK(cudaMemcpyAsync(d_m + first, buffer, len * sizeof(float), cudaMemcpyHostToDevice, s));
    kepler<<<(len + BLOCK - 1) / BLOCK, BLOCK, 0, s>>>(d_m + first, d_anomaly + first, len);
    CB_CHECK(cudaGetLastError());
  }
  CB_CHECK(cudaStreamSynchronize(s));  // every copy is done before the buffers are freed
  for (int b = 0; b < 2; b++) CB_CHECK(cudaFreeHost(staging[b]));
}
// ANCHOR_END: bug
