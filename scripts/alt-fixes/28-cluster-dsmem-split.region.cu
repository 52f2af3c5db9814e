  // ANCHOR: bug
  // Another fix: the cluster barrier split in two. A block arrives when it has finished a step
  // (its reads of cur, its writes of next) and waits for the others just before the next step;
  // work that touches no shared cell could run in between.
  if (i < cols) buf[0][t] = x[row + i];
  cluster.barrier_arrive();
  for (int s = 0; s < STEPS; s++) {
    float* cur = buf[s % 2];
    float* next = buf[(s + 1) % 2];
    cluster.barrier_wait();
    if (i < cols) {
      const float l = cluster.map_shared_rank(cur, left / BLOCK)[left % BLOCK];
      const float r = cluster.map_shared_rank(cur, right / BLOCK)[right % BLOCK];
      next[t] = 0.25f * l + 0.5f * cur[t] + 0.25f * r;
    }
    cluster.barrier_arrive();
  }
  cluster.barrier_wait();
  // ANCHOR_END: bug
