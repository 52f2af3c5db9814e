// ANCHOR: bug
// Another fix: count in clusters, not blocks. Ask the runtime how many clusters of this kernel fit
// on the GPU at once (cudaOccupancyMaxActiveClusters, for this block size, cluster size and shared
// memory), launch no more clusters than that, than MAX_BLOCKS allows or than the input needs, and
// let the grid stride cover the rest. The grid is a whole number of clusters by construction.
void launch_histogram(const unsigned* d_values, unsigned* d_counts, int n, int bins) {
  const int per_block = (bins + CLUSTER - 1) / CLUSTER;

  cudaLaunchAttribute cluster_dim;
  cluster_dim.id = cudaLaunchAttributeClusterDimension;
  cluster_dim.val.clusterDim.x = CLUSTER;
  cluster_dim.val.clusterDim.y = 1;
  cluster_dim.val.clusterDim.z = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(CLUSTER);
  config.blockDim = dim3(BLOCK);
  config.dynamicSmemBytes = per_block * sizeof(unsigned);
  config.attrs = &cluster_dim;
  config.numAttrs = 1;
  int resident = 0;
  CB_CHECK(cudaOccupancyMaxActiveClusters(&resident, cluster_histogram, &config));
  const int needed = (n + BLOCK * CLUSTER - 1) / (BLOCK * CLUSTER);
  const int clusters = std::max(1, std::min({needed, resident, MAX_BLOCKS / CLUSTER}));
  config.gridDim = dim3(clusters * CLUSTER);
  CB_CHECK(cudaLaunchKernelEx(&config, cluster_histogram, d_values, d_counts, n, bins, per_block));
}
// ANCHOR_END: bug
