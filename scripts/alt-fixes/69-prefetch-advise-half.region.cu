// ANCHOR: rounds
// A half-fix: advice that cannot be followed here. t is advised to live on the GPU (its preferred
// location) and to stay mapped for the host (accessed by the CPU), in the hope that the host reads
// the sensors from GPU memory where they lie. But on a GPU attached by PCIe the CPU cannot map GPU
// memory: cudaMemAdvise's documentation says the data may then be migrated to host memory on CPU
// access, and that with a GPU as the preferred location a page that thrashes keeps thrashing. Every
// page still goes to the host when the host reads its sensor, and back when the next round's kernel
// touches it.
void cool_and_watch(const float* h_x, float* h_y, float* h_log, size_t racks, size_t rack,
                    int rounds, int steps) {
  const size_t n = racks * rack, bytes = n * sizeof(float);
  float* t;
  CB_CHECK(cudaMallocManaged(&t, bytes));

  int device;
  CB_CHECK(cudaGetDevice(&device));
  cudaMemLocation gpu{}, host{};
  gpu.type = cudaMemLocationTypeDevice;
  gpu.id = device;
  host.type = cudaMemLocationTypeHost;
  CB_CHECK(cudaMemAdvise(t, bytes, cudaMemAdviseSetPreferredLocation, gpu));
  CB_CHECK(cudaMemAdvise(t, bytes, cudaMemAdviseSetAccessedBy, host));
  CB_CHECK(cudaMemcpy(t, h_x, bytes, cudaMemcpyDefault));

  const unsigned blocks = static_cast<unsigned>((n + BLOCK - 1) / BLOCK);
  for (int r = 0; r < rounds; r++) {
    cool<<<blocks, BLOCK>>>(t, n, steps);
    CB_CHECK(cudaGetLastError());
    CB_CHECK(cudaDeviceSynchronize());
    for (size_t k = 0; k < racks; k++) h_log[r * racks + k] = t[k * rack];
  }

  CB_CHECK(cudaMemcpy(h_y, t, bytes, cudaMemcpyDefault));
  CB_CHECK(cudaFree(t));
}
// ANCHOR_END: rounds
