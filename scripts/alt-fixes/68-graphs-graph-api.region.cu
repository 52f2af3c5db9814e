// ANCHOR: steps
// Another fix: the same one-step graph, built node by node with the graph API instead of captured
// from a stream. Each kernel node names its kernel, its grid and its arguments (the addresses of
// variables holding them: the node copies their values when it is added), and depends on the node
// before it; the graph is instantiated once and launched once per step.
void run_steps(const Chain& c, int steps, cudaStream_t stream) {
  const float* k = c.k;
  float *x = c.x, *y = c.y, *partial = c.partial, *scale = c.scale, *lambda = c.lambda;
  int n = c.n, blocks = c.blocks;
  void* stiffness_args[] = {&k, &x, &y, &n};
  void* norms_args[] = {&y, &partial, &n};
  void* finish_args[] = {&partial, &blocks, &scale, &lambda};
  void* normalize_args[] = {&y, &scale, &x, &n};
  struct Node {
    const void* kernel;
    unsigned grid;
    void** args;
  };
  const Node nodes[] = {
      {reinterpret_cast<const void*>(stiffness), static_cast<unsigned>(blocks), stiffness_args},
      {reinterpret_cast<const void*>(block_norms), static_cast<unsigned>(blocks), norms_args},
      {reinterpret_cast<const void*>(finish_norm), 1u, finish_args},
      {reinterpret_cast<const void*>(normalize), static_cast<unsigned>(blocks), normalize_args},
  };
  cudaGraph_t graph;
  CB_CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t before = nullptr;
  for (const Node& node : nodes) {
    cudaKernelNodeParams p = {};
    p.func = const_cast<void*>(node.kernel);
    p.gridDim = dim3(node.grid);
    p.blockDim = dim3(BLOCK);
    p.sharedMemBytes = 0;
    p.kernelParams = node.args;
    p.extra = nullptr;
    cudaGraphNode_t added;
    CB_CHECK(cudaGraphAddKernelNode(&added, graph, before ? &before : nullptr, before ? 1 : 0, &p));
    before = added;
  }
  cudaGraphExec_t step;
  CB_CHECK(cudaGraphInstantiate(&step, graph, 0));
  for (int s = 0; s < steps; s++) CB_CHECK(cudaGraphLaunch(step, stream));
  CB_CHECK(cudaGraphExecDestroy(step));
  CB_CHECK(cudaGraphDestroy(graph));
}
// ANCHOR_END: steps
