// ANCHOR: bug
// Another fix: size the grid by the GPU (eight blocks of 256 threads fill an SM: 2048 threads,
// and the grid-stride loop takes any n), then the scratch by the grid.
void dot_on_device(const float* d_a, const float* d_b, int n, float* d_dot) {
  int device, sms;
  CB_CHECK(cudaGetDevice(&device));
  CB_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, 8 * sms);
  float* d_partial;
  CB_CHECK(cudaMalloc(&d_partial, blocks * sizeof(float)));
  partial_dots<<<blocks, BLOCK>>>(d_a, d_b, n, d_partial);
  CB_CHECK(cudaGetLastError());
  finish<<<1, BLOCK>>>(d_partial, blocks, d_dot);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaFree(d_partial));
}
// ANCHOR_END: bug
