  // ANCHOR: bug
  CB_CHECK(cudaMemset(d_sum, 0, sizeof(float)));
  sum_blocks<<<blocks, BLOCK>>>(d_x, n, d_sum);
  CB_CHECK(cudaGetLastError());
  // A half-fix: wait for pass 1 before reading the sum. The kernel is done, but d_sum is still
  // an address in device memory, and the host still cannot read it through a pointer.
  CB_CHECK(cudaDeviceSynchronize());
  const float mean = *d_sum / n;
  // ANCHOR_END: bug
