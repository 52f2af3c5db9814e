// 34-managed-race: the marked regions of the untouched exercises/34-managed-race/growth.cu. The pristine exercise is
// solutions/34-managed-race/growth.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
  // ANCHOR: bug
  grow<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, y, settled, n, steps);
  CB_CHECK(cudaGetLastError());
  // Managed memory: the host reads the results straight through the pointer, no copy back.
  std::copy(y, y + n, h_y);
  std::copy(settled, settled + n, h_settled);
  // ANCHOR_END: bug
