// ANCHOR: bug
// A half-fix: the launch is checked, and the grid is made a multiple of CLUSTER, but by rounding
// down. The grid stride still covers every value of a large input, but an input that needs fewer
// than CLUSTER blocks (1,792 values or fewer) gets a grid of zero blocks, and that launch fails too.
void launch_histogram(const unsigned* d_values, unsigned* d_counts, int n, int bins) {
  const int per_block = (bins + CLUSTER - 1) / CLUSTER;
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS) / CLUSTER * CLUSTER;

  cudaLaunchAttribute cluster_dim;
  cluster_dim.id = cudaLaunchAttributeClusterDimension;
  cluster_dim.val.clusterDim.x = CLUSTER;
  cluster_dim.val.clusterDim.y = 1;
  cluster_dim.val.clusterDim.z = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(BLOCK);
  config.dynamicSmemBytes = per_block * sizeof(unsigned);
  config.attrs = &cluster_dim;
  config.numAttrs = 1;
  CB_CHECK(cudaLaunchKernelEx(&config, cluster_histogram, d_values, d_counts, n, bins, per_block));
}
// ANCHOR_END: bug
