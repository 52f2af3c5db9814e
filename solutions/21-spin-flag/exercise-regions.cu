// 21-spin-flag: the marked regions of the untouched exercises/21-spin-flag/sum.cu. The pristine exercise is
// solutions/21-spin-flag/sum.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
  // ANCHOR: wait
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = mine;
    // Block 0 is the one that waits: only the others need to say they are done.
    if (blockIdx.x != 0) {
      __threadfence();  // the partial sum is visible to every block before the count says so
      atomicAdd(arrived, 1u);
    }
  }
  if (blockIdx.x != 0) return;
  // Block 0: wait until every block's partial sum is written, then add them.
  if (threadIdx.x == 0) {
    while (atomicAdd(arrived, 0u) < gridDim.x) {
    }
    __threadfence();
  }
  __syncthreads();
  const volatile float* sums = partial;  // written by other blocks: read around the L1 cache
  float t = 0.0f;
  for (int b = threadIdx.x; b < gridDim.x; b += BLOCK) t += sums[b];
  t = block_sum(t);
  if (threadIdx.x == 0) *total = t;
  // ANCHOR_END: wait
