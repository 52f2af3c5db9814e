// 15-global-race: the in-degree of every node of a graph, the first step of building its CSR
// (compressed sparse row) form.
//
// The graph has NODES nodes and an edge list; edge e points at node dst[e]. One thread per edge
// counts its edge at its target node.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int NODES = 1024;
constexpr int BLOCK = 256;

__global__ void in_degrees(const unsigned* dst, int edges, unsigned* degree) {
  for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < edges; e += gridDim.x * blockDim.x) {
    // ANCHOR: bug
    // Many edges point at one node: their increments must not overwrite each other.
    atomicAdd(&degree[dst[e] % NODES], 1u);
    // ANCHOR_END: bug
  }
}

void cb_run(cb::Io& io) {
  const int edges = static_cast<int>(io.param("edges"));
  const unsigned* h_dst = io.input<unsigned>("dst");
  unsigned* h_degree = io.output<unsigned>("degree");

  unsigned *d_dst, *d_degree;
  CB_CHECK(cudaMalloc(&d_dst, edges * sizeof(unsigned)));
  CB_CHECK(cudaMalloc(&d_degree, NODES * sizeof(unsigned)));
  CB_CHECK(cudaMemcpy(d_dst, h_dst, edges * sizeof(unsigned), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemset(d_degree, 0, NODES * sizeof(unsigned)));
  const int blocks = std::max(1, std::min((edges + BLOCK - 1) / BLOCK, 2048));
  in_degrees<<<blocks, BLOCK>>>(d_dst, edges, d_degree);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_degree, d_degree, NODES * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_dst));
  CB_CHECK(cudaFree(d_degree));
}
