// 23-oversized-scratch: the marked regions of the untouched exercises/23-oversized-scratch/dot.cu. The pristine exercise is
// solutions/23-oversized-scratch/dot.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// Both passes, with the scratch they share.
void dot_on_device(const float* d_a, const float* d_b, int n, float* d_dot) {
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);
  float* d_partial;
  CB_CHECK(cudaMalloc(&d_partial, n * sizeof(float)));
  partial_dots<<<blocks, BLOCK>>>(d_a, d_b, n, d_partial);
  CB_CHECK(cudaGetLastError());
  finish<<<1, BLOCK>>>(d_partial, blocks, d_dot);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaFree(d_partial));
}
// ANCHOR_END: bug
