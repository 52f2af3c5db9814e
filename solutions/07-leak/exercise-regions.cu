// 07-leak: the marked regions of the untouched exercises/07-leak/center.cu. The pristine exercise is
// solutions/07-leak/center.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: alloc
// Scratch for one partial sum per block.
float* alloc_partials(int blocks) {
  float* partial;
  CB_CHECK(cudaMalloc(&partial, blocks * sizeof(float)));
  return partial;
}
// ANCHOR_END: alloc
  // ANCHOR: bug
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
  // ANCHOR_END: bug
