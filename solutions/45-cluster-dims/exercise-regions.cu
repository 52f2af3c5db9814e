// 45-cluster-dims: the marked regions of the untouched exercises/45-cluster-dims/cluster_hist.cu. The pristine exercise is
// solutions/45-cluster-dims/cluster_hist.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// One value per thread, at most MAX_BLOCKS blocks (the grid stride does the rest), CLUSTER blocks
// to a cluster, each with its slice of the bins.
void launch_histogram(const unsigned* d_values, unsigned* d_counts, int n, int bins) {
  const int per_block = (bins + CLUSTER - 1) / CLUSTER;
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);

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
  cudaLaunchKernelEx(&config, cluster_histogram, d_values, d_counts, n, bins, per_block);
}
// ANCHOR_END: bug
