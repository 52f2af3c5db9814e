// ANCHOR: steps
// A half-fix: every step is a CUDA graph, but the graph is captured, instantiated and destroyed
// inside the loop, once per step. One graph launch per step, a quarter of the original's launches;
// yet instantiating a graph costs the host more than the four kernel launches it replaces (the
// driver checks and packs every node each time), and a graph launched once saves nothing. A graph
// pays for itself when it is built once and launched many times.
void launch_step(const Chain& c, cudaStream_t stream) {
  stiffness<<<c.blocks, BLOCK, 0, stream>>>(c.k, c.x, c.y, c.n);
  CB_CHECK(cudaGetLastError());
  block_norms<<<c.blocks, BLOCK, 0, stream>>>(c.y, c.partial, c.n);
  CB_CHECK(cudaGetLastError());
  finish_norm<<<1, BLOCK, 0, stream>>>(c.partial, c.blocks, c.scale, c.lambda);
  CB_CHECK(cudaGetLastError());
  normalize<<<c.blocks, BLOCK, 0, stream>>>(c.y, c.scale, c.x, c.n);
  CB_CHECK(cudaGetLastError());
}

void run_steps(const Chain& c, int steps, cudaStream_t stream) {
  for (int s = 0; s < steps; s++) {
    cudaGraph_t graph;
    cudaGraphExec_t step;
    CB_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    launch_step(c, stream);
    CB_CHECK(cudaStreamEndCapture(stream, &graph));
    CB_CHECK(cudaGraphInstantiate(&step, graph, 0));
    CB_CHECK(cudaGraphLaunch(step, stream));
    CB_CHECK(cudaGraphExecDestroy(step));
    CB_CHECK(cudaGraphDestroy(graph));
  }
}
// ANCHOR_END: steps
