// 33-pinned-reuse: the marked regions of the untouched exercises/33-pinned-reuse/kepler.cu. The pristine exercise is
// solutions/33-pinned-reuse/kepler.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// Upload the anomalies chunk by chunk through one pinned staging buffer, and solve each chunk as it
// arrives. The copies are asynchronous: the host fills the buffer, queues its copy and the chunk's
// kernel on `s`, and goes on with the next chunk while the GPU works.
void upload_and_solve(const float* h_m, float* d_m, float* d_anomaly, int n, cudaStream_t s) {
  float* staging;
  CB_CHECK(cudaMallocHost(&staging, CHUNK * sizeof(float)));
  for (int first = 0; first < n; first += CHUNK) {
    const int len = std::min(CHUNK, n - first);
    std::memcpy(staging, h_m + first, len * sizeof(float));
    CB_CHECK(cudaMemcpyAsync(d_m + first, staging, len * sizeof(float), cudaMemcpyHostToDevice, s));
    kepler<<<(len + BLOCK - 1) / BLOCK, BLOCK, 0, s>>>(d_m + first, d_anomaly + first, len);
    CB_CHECK(cudaGetLastError());
  }
  CB_CHECK(cudaStreamSynchronize(s));  // every copy is done before the buffer is freed
  CB_CHECK(cudaFreeHost(staging));
}
// ANCHOR_END: bug
