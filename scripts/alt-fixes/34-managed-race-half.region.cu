  // ANCHOR: bug
  // A half-fix: the synchronize is there, but after the host has read y. It waits for the kernel
  // correctly, and too late: the copy has already taken whatever y held a few microseconds after
  // the launch, and the results the kernel writes afterwards are never read.
  grow<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, y, settled, n, steps);
  CB_CHECK(cudaGetLastError());
  std::copy(y, y + n, h_y);
  std::copy(settled, settled + n, h_settled);
  CB_CHECK(cudaDeviceSynchronize());
  // ANCHOR_END: bug
