  // ANCHOR: wait
  // A half-fix: the "last block" pattern, with the ticket compared off by one. Nothing hangs, but
  // no block is last and the total is never written.
  // No block waits for another: every block counts itself in, and the one that arrives last (its
  // ticket is gridDim.x - 1) adds the partial sums. That needs no block to be resident at the same
  // time as any other, so it cannot hang whatever the grid (the threadFenceReduction pattern).
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = mine;
    __threadfence();  // the partial sum is visible to every block before the count says so
    const unsigned ticket = atomicAdd(arrived, 1u);
    last = ticket == gridDim.x;  // a half-fix: atomicAdd returns the count *before* the add
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  const volatile float* sums = partial;  // written by other blocks: read around the L1 cache
  float t = 0.0f;
  for (int b = threadIdx.x; b < gridDim.x; b += BLOCK) t += sums[b];
  t = block_sum(t);
  if (threadIdx.x == 0) *total = t;
  // ANCHOR_END: wait
