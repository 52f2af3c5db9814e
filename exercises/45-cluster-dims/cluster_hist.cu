// 45-cluster-dims: a histogram with 65,536 bins (16-bit samples), spread over a thread block cluster
// (Hopper, sm_90).
//
// 65,536 counters take 256 KB: more shared memory than one block can have (227 KB on sm_90), so a
// cluster of CLUSTER blocks shares them through distributed shared memory. Block r of a cluster
// keeps bins r * per_block .. r * per_block + per_block - 1; a thread that reads a value adds one to
// its bin in whichever block of the cluster owns it (cluster.map_shared_rank, an atomic in that
// block's shared memory). At the end each block adds its slice into the global histogram. The
// blocks walk the input with a grid stride, so any number of blocks covers it. The launch asks for
// the cluster with cudaLaunchKernelEx and a cluster-dimension attribute.
// Run it plainly and the large inputs come out right, while the small ones fail far from the
// launch. Run the check and see what the tool says.
#include <algorithm>
#include <cooperative_groups.h>
#include "cudabugs.cuh"

namespace cg = cooperative_groups;

constexpr int BLOCK = 256;
constexpr int CLUSTER = 8;        // blocks per cluster (8 is the portable maximum)
constexpr int MAX_BLOCKS = 264;   // two blocks per SM of an H100
constexpr int MAX_SLICE = 12288;  // bins per block: 48 KB of dynamic shared memory, no opt-in needed

__global__ void cluster_histogram(const unsigned* values, unsigned* counts, int n, int bins, int per_block) {
  extern __shared__ unsigned slice[];  // this block's share of the cluster's bins
  cg::cluster_group cluster = cg::this_cluster();
  for (int b = threadIdx.x; b < per_block; b += blockDim.x) slice[b] = 0;
  cluster.sync();  // every slice is zeroed, and every block of the cluster running, before any atomic

  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int bin = static_cast<int>(values[i] % static_cast<unsigned>(bins));
    unsigned* owner = cluster.map_shared_rank(slice, bin / per_block);
    atomicAdd(&owner[bin % per_block], 1u);
  }
  cluster.sync();  // every atomic into this slice is done (and no block reads another's slice after)

  const int first = static_cast<int>(cluster.block_rank()) * per_block;
  for (int b = threadIdx.x; b < per_block && first + b < bins; b += blockDim.x) {
    if (slice[b] != 0) atomicAdd(&counts[first + b], slice[b]);
  }
}

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

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const int bins = static_cast<int>(io.param("bins"));
  if (bins > CLUSTER * MAX_SLICE) {
    std::fprintf(stderr, "%d bins do not fit in one cluster's shared memory (at most %d)\n", bins, CLUSTER * MAX_SLICE);
    std::exit(2);
  }
  const unsigned* h_values = io.input<unsigned>("values");
  unsigned* h_counts = io.output<unsigned>("counts");

  unsigned *d_values, *d_counts;
  CB_CHECK(cudaMalloc(&d_values, n * sizeof(unsigned)));
  CB_CHECK(cudaMalloc(&d_counts, bins * sizeof(unsigned)));
  CB_CHECK(cudaMemcpy(d_values, h_values, n * sizeof(unsigned), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemset(d_counts, 0, bins * sizeof(unsigned)));
  launch_histogram(d_values, d_counts, n, bins);
  CB_CHECK(cudaMemcpy(h_counts, d_counts, bins * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_values));
  CB_CHECK(cudaFree(d_counts));
}
