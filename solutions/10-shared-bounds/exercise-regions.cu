// 10-shared-bounds: the marked regions of the untouched exercises/10-shared-bounds/stencil.cu. The pristine exercise is
// solutions/10-shared-bounds/stencil.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
  // ANCHOR: bug
  // The block's samples, with the RADIUS halo samples around them.
  __shared__ float tile[BLOCK + RADIUS];
  // ANCHOR_END: bug
  // ANCHOR: load
  tile[RADIUS + t] = x[clamp_index(base + t, n)];
  if (t < RADIUS) {
    tile[t] = x[clamp_index(base - RADIUS + t, n)];
    tile[RADIUS + BLOCK + t] = x[clamp_index(base + BLOCK + t, n)];
  }
  // ANCHOR_END: load
