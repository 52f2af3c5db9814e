// 28-cluster-dsmem: the marked regions of the untouched exercises/28-cluster-dsmem/diffuse.cu. The pristine exercise is
// solutions/28-cluster-dsmem/diffuse.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
  // ANCHOR: bug
  if (i < cols) buf[0][t] = x[row + i];
  cluster.sync();  // every block's cells are loaded before a neighbour reads them
  for (int s = 0; s < STEPS; s++) {
    float* cur = buf[s % 2];
    float* next = buf[(s + 1) % 2];
    if (i < cols) {
      const float l = cluster.map_shared_rank(cur, left / BLOCK)[left % BLOCK];
      const float r = cluster.map_shared_rank(cur, right / BLOCK)[right % BLOCK];
      next[t] = 0.25f * l + 0.5f * cur[t] + 0.25f * r;
    }
    // Each block writes only its own cells, so a block barrier is enough between steps.
    __syncthreads();
  }
  // ANCHOR_END: bug
