// 05-memset: the marked regions of the untouched exercises/05-memset/histogram.cu. The pristine exercise is
// solutions/05-memset/histogram.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
  // ANCHOR: merge
  for (int b = threadIdx.x; b < BINS; b += blockDim.x)
    if (local[b] != 0) atomicAdd(&bins[b], local[b]);
  // ANCHOR_END: merge
  // ANCHOR: bug
  CB_CHECK(cudaMemset(d_bins, 0, BINS));
  // ANCHOR_END: bug
