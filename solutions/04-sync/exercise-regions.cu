// 04-sync: the marked regions of the untouched exercises/04-sync/smooth.cu. The pristine exercise is
// solutions/04-sync/smooth.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
  // ANCHOR: bug
  if (t < BLOCK / 2) {
    // First half of the block: its elements and the left halo.
    tile[t + 1] = load_clamped(x, i, n);
    if (t == 0) tile[0] = load_clamped(x, i - 1, n);
    __syncthreads();
    if (i < n) y[i] = 0.25f * tile[t] + 0.5f * tile[t + 1] + 0.25f * tile[t + 2];
  } else {
    // Second half: its elements and the right halo.
    tile[t + 1] = load_clamped(x, i, n);
    if (t == BLOCK - 1) tile[BLOCK + 1] = load_clamped(x, i + 1, n);
    __syncthreads();
    if (i < n) y[i] = 0.25f * tile[t] + 0.5f * tile[t + 1] + 0.25f * tile[t + 2];
  }
  // ANCHOR_END: bug
