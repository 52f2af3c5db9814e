  // ANCHOR: bug
  // Another fix: put the sum in memory both sides can reach through a pointer. Managed memory
  // (cudaMallocManaged) is mapped for the host as well; the host may read it once the kernel that
  // writes it is done, hence the synchronize. d_sum is left unused.
  float* sum;
  CB_CHECK(cudaMallocManaged(&sum, sizeof(float)));
  CB_CHECK(cudaMemset(sum, 0, sizeof(float)));
  sum_blocks<<<blocks, BLOCK>>>(d_x, n, sum);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaDeviceSynchronize());
  const float mean = *sum / n;
  CB_CHECK(cudaFree(sum));
  // ANCHOR_END: bug
