// ANCHOR: bug
// Another fix: two staging buffers, each with its own event. Chunk c goes through buffer c % 2, and
// before the host fills a buffer it waits for that buffer's last copy: the copy of chunk c - 2. The
// host may run two chunks ahead of the copies instead of one; it still never writes a buffer that a
// queued copy has not read yet.
void upload_and_solve(const float* h_m, float* d_m, float* d_anomaly, int n, cudaStream_t s) {
  float* staging[2];
  cudaEvent_t copied[2];
  for (int b = 0; b < 2; b++) {
    CB_CHECK(cudaMallocHost(&staging[b], CHUNK * sizeof(float)));
    CB_CHECK(cudaEventCreateWithFlags(&copied[b], cudaEventDisableTiming));
  }
  for (int first = 0, c = 0; first < n; first += CHUNK, c++) {
    const int len = std::min(CHUNK, n - first);
    const int b = c % 2;
    CB_CHECK(cudaEventSynchronize(copied[b]));  // the copy of chunk c - 2 has read this buffer
    std::memcpy(staging[b], h_m + first, len * sizeof(float));
    CB_CHECK(cudaMemcpyAsync(d_m + first, staging[b], len * sizeof(float), cudaMemcpyHostToDevice, s));
    CB_CHECK(cudaEventRecord(copied[b], s));
    kepler<<<(len + BLOCK - 1) / BLOCK, BLOCK, 0, s>>>(d_m + first, d_anomaly + first, len);
    CB_CHECK(cudaGetLastError());
  }
  CB_CHECK(cudaStreamSynchronize(s));  // every copy is done before the buffers are freed
  for (int b = 0; b < 2; b++) {
    CB_CHECK(cudaEventDestroy(copied[b]));
    CB_CHECK(cudaFreeHost(staging[b]));
  }
}
// ANCHOR_END: bug
