// 22-host-deref: the marked regions of the untouched exercises/22-host-deref/center.cu. The pristine exercise is
// solutions/22-host-deref/center.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
  // ANCHOR: bug
  CB_CHECK(cudaMemset(d_sum, 0, sizeof(float)));
  sum_blocks<<<blocks, BLOCK>>>(d_x, n, d_sum);
  CB_CHECK(cudaGetLastError());
  // The mean, for pass 2: one division, on the host.
  const float mean = *d_sum / n;
  // ANCHOR_END: bug
