  // ANCHOR: bug
  for (int k = 0; k < tiles; k++) {
    // Another fix: keep the prefetch, and on the last tile, where nothing newer was committed,
    // wait for every group (wait_prior(0)) instead of all but one.
    if (k + 1 < tiles) stage(buf[(k + 1) % 2], row, cols, k + 1);
    if (k + 1 < tiles) {
      __pipeline_wait_prior(1);
    } else {
      __pipeline_wait_prior(0);
    }
    __syncthreads();
    for (int j = 0; j < 4; j++) acc += buf[k % 2][threadIdx.x + j * BLOCK];
    __syncthreads();
  }
  // ANCHOR_END: bug
