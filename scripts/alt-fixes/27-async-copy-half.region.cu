  // ANCHOR: bug
  for (int k = 0; k < tiles; k++) {
    // A half-fix: the wait counts are right now (an empty group after the last tile), but the
    // barrier after the wait is gone: a thread's wait covers only its own copies, and it sums
    // floats that other threads copied.
    if (k + 1 < tiles) {
      stage(buf[(k + 1) % 2], row, cols, k + 1);
    } else {
      __pipeline_commit();
    }
    __pipeline_wait_prior(1);
    for (int j = 0; j < 4; j++) acc += buf[k % 2][threadIdx.x + j * BLOCK];
    __syncthreads();
  }
  // ANCHOR_END: bug
