// ANCHOR: rounds
// A half-fix: prefetch every round. Before each kernel all of t is prefetched to the GPU, and after
// it (in the same stream, so once the kernel is done) all of it back to the host, where the host
// reads the sensors. No page waits for a fault any more: each trip is one bulk migration. But the
// trips are still there: every round still moves the whole of t to the GPU and back, 24 MiB at the
// timed size, for a few kilobytes of sensor readings. Prefetching makes each move cheaper; it does
// not make the moves unnecessary.
void cool_and_watch(const float* h_x, float* h_y, float* h_log, size_t racks, size_t rack,
                    int rounds, int steps) {
  const size_t n = racks * rack, bytes = n * sizeof(float);
  float* t;
  CB_CHECK(cudaMallocManaged(&t, bytes));
  CB_CHECK(cudaMemcpy(t, h_x, bytes, cudaMemcpyDefault));

  int device;
  CB_CHECK(cudaGetDevice(&device));
  cudaMemLocation gpu{}, host{};
  gpu.type = cudaMemLocationTypeDevice;
  gpu.id = device;
  host.type = cudaMemLocationTypeHost;
  const unsigned blocks = static_cast<unsigned>((n + BLOCK - 1) / BLOCK);
  for (int r = 0; r < rounds; r++) {
    CB_CHECK(cudaMemPrefetchAsync(t, bytes, gpu, 0, 0));
    cool<<<blocks, BLOCK>>>(t, n, steps);
    CB_CHECK(cudaGetLastError());
    CB_CHECK(cudaMemPrefetchAsync(t, bytes, host, 0, 0));
    CB_CHECK(cudaDeviceSynchronize());
    for (size_t k = 0; k < racks; k++) h_log[r * racks + k] = t[k * rack];
  }

  CB_CHECK(cudaMemcpy(h_y, t, bytes, cudaMemcpyDefault));
  CB_CHECK(cudaFree(t));
}
// ANCHOR_END: rounds
