  // ANCHOR: bug
  // Another fix: wait for this kernel alone rather than for the whole device. An event recorded
  // after the launch, in the same stream, completes when the kernel has; cudaEventSynchronize
  // blocks the host until then (sleeping, with cudaEventBlockingSync: a spinning wait burns a core).
  cudaEvent_t grown;
  CB_CHECK(cudaEventCreateWithFlags(&grown, cudaEventDisableTiming | cudaEventBlockingSync));
  grow<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, y, settled, n, steps);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaEventRecord(grown));
  CB_CHECK(cudaEventSynchronize(grown));
  CB_CHECK(cudaEventDestroy(grown));
  std::copy(y, y + n, h_y);
  std::copy(settled, settled + n, h_settled);
  // ANCHOR_END: bug
