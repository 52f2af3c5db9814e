// 09-use-after-free: the marked regions of the untouched exercises/09-use-after-free/dot.cu. The pristine exercise is
// solutions/09-use-after-free/dot.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: finish
__global__ void finish(const float* partial, int blocks, float* out) {
  float acc = 0.0f;
  for (int i = threadIdx.x; i < blocks; i += BLOCK) acc += partial[i];
  const float total = block_sum(acc);
  if (threadIdx.x == 0) *out = total;
}
// ANCHOR_END: finish
  // ANCHOR: bug
  // Pass 1 is done with everything but the partial sums: give the memory back before pass 2.
  CB_CHECK(cudaFree(d_a));
  CB_CHECK(cudaFree(d_b));
  CB_CHECK(cudaFree(d_partial));
  finish<<<1, BLOCK>>>(d_partial, blocks, d_dot);
  CB_CHECK(cudaGetLastError());
  // ANCHOR_END: bug
