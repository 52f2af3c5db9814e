// 28-cluster-dsmem: heat diffusion along rods, many steps without a trip to global memory.
//
// Each row of the input is a rod of at most ROW cells; each of STEPS steps (the substeps of one
// frame of a simulation) replaces every cell by (left + 2 * cell + right) / 4, the rod's ends
// clamped. One thread block cluster (Hopper, sm_90)
// holds one rod: block r of the cluster keeps cells r * BLOCK .. r * BLOCK + BLOCK - 1 in its shared
// memory, in two buffers (this step's values and the next step's). A cell at the edge of a block
// needs a neighbour from the next block, read straight from that block's shared memory through
// distributed shared memory (cluster.map_shared_rank).
#include <cooperative_groups.h>
#include "cudabugs.cuh"

namespace cg = cooperative_groups;

constexpr int BLOCK = 256;
constexpr int CLUSTER = 8;               // blocks per cluster (8 is the portable maximum)
constexpr int ROW = BLOCK * CLUSTER;      // the longest rod a cluster holds: 2048 cells
constexpr int STEPS = 16;

__global__ void __cluster_dims__(CLUSTER, 1, 1) diffuse(const float* x, float* y, int cols) {
  __shared__ float buf[2][BLOCK];
  cg::cluster_group cluster = cg::this_cluster();
  const int t = threadIdx.x;
  const int i = cluster.block_rank() * BLOCK + t;  // this thread's cell of the rod
  const size_t row = static_cast<size_t>(blockIdx.x / CLUSTER) * cols;
  const int left = max(i - 1, 0), right = min(i + 1, cols - 1);

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

  if (i < cols) y[row + i] = buf[STEPS % 2][t];
  cluster.sync();  // a block's shared memory must outlive its neighbours' last reads of it
}

void cb_run(cb::Io& io) {
  const int rows = static_cast<int>(io.param("rows"));
  const int cols = static_cast<int>(io.param("cols"));
  if (cols > ROW) {
    std::fprintf(stderr, "a rod of %d cells does not fit in one cluster (at most %d)\n", cols, ROW);
    std::exit(2);
  }
  const size_t n = static_cast<size_t>(rows) * cols;
  const float* h_x = io.input<float>("x");
  float* h_y = io.output<float>("y");

  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  diffuse<<<rows * CLUSTER, BLOCK>>>(d_x, d_y, cols);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
