  // ANCHOR: bug
  // A half-fix: cluster.sync() between the steps now, but the sync after loading became a block
  // barrier: in the first step a block reads its neighbours' edge cells before they are loaded.
  if (i < cols) buf[0][t] = x[row + i];
  __syncthreads();
  for (int s = 0; s < STEPS; s++) {
    float* cur = buf[s % 2];
    float* next = buf[(s + 1) % 2];
    if (i < cols) {
      const float l = cluster.map_shared_rank(cur, left / BLOCK)[left % BLOCK];
      const float r = cluster.map_shared_rank(cur, right / BLOCK)[right % BLOCK];
      next[t] = 0.25f * l + 0.5f * cur[t] + 0.25f * r;
    }
    cluster.sync();
  }
  // ANCHOR_END: bug
