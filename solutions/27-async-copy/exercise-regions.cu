// 27-async-copy: the marked regions of the untouched exercises/27-async-copy/rowsum.cu. The pristine exercise is
// solutions/27-async-copy/rowsum.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
  // ANCHOR: bug
  for (int k = 0; k < tiles; k++) {
    // Prefetch the next tile into the other buffer, then wait for every commit group but the
    // newest one (that prefetch): tile k has landed.
    if (k + 1 < tiles) stage(buf[(k + 1) % 2], row, cols, k + 1);
    __pipeline_wait_prior(1);
    __syncthreads();
    for (int j = 0; j < 4; j++) acc += buf[k % 2][threadIdx.x + j * BLOCK];
    __syncthreads();  // every thread is done with buf[k % 2] before it is refilled
  }
  // ANCHOR_END: bug
