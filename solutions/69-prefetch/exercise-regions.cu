// 69-prefetch: the marked regions of the untouched exercises/69-prefetch/cool.cu. The pristine exercise is
// solutions/69-prefetch/cool.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: rounds
// The temperatures go into managed memory once; then each round the GPU cools every body, and the
// host reads each rack's sensor straight through the same pointer, no copy needed. The final
// temperatures come out with one copy at the end.
void cool_and_watch(const float* h_x, float* h_y, float* h_log, size_t racks, size_t rack,
                    int rounds, int steps) {
  const size_t n = racks * rack, bytes = n * sizeof(float);
  float* t;
  CB_CHECK(cudaMallocManaged(&t, bytes));
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
