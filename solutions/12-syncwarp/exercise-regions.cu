// 12-syncwarp: the marked regions of the untouched exercises/12-syncwarp/rowsum16.cu. The pristine exercise is
// solutions/12-syncwarp/rowsum16.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
  // ANCHOR: bug
  // A row is 16 lanes wide: synchronise those 16 lanes between the steps.
  const unsigned mask = 0x0000ffffu;
  for (int offset = COLS / 2; offset > 0; offset >>= 1) {
    __syncwarp(mask);
    if (col < offset) s[t] += s[t + offset];
  }
  // ANCHOR_END: bug
