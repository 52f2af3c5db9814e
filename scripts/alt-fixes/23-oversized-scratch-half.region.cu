// ANCHOR: bug
// Both passes, with the scratch they share. A half-fix: the scratch sized for the largest grid,
// MAX_BLOCKS partial sums, while a grid of fewer blocks writes only the first `blocks`.
void dot_on_device(const float* d_a, const float* d_b, int n, float* d_dot) {
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);
  float* d_partial;
  CB_CHECK(cudaMalloc(&d_partial, MAX_BLOCKS * sizeof(float)));
  partial_dots<<<blocks, BLOCK>>>(d_a, d_b, n, d_partial);
  CB_CHECK(cudaGetLastError());
  finish<<<1, BLOCK>>>(d_partial, blocks, d_dot);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaFree(d_partial));
}
// ANCHOR_END: bug
