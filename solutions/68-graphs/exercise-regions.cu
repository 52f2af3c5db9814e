// 68-graphs: the marked region of the untouched exercises/68-graphs/chain.cu: `reset` restores it,
// `list` compares against it and the book shows it.
// ANCHOR: steps
// Each step launches its four kernels in order, in `stream`: the GPU runs them one after another,
// each when the one before has finished. Every launch is checked where it happens (cudaGetLastError
// does not wait for the GPU), and nothing waits inside the loop.
void run_steps(const Chain& c, int steps, cudaStream_t stream) {
  for (int s = 0; s < steps; s++) {
    stiffness<<<c.blocks, BLOCK, 0, stream>>>(c.k, c.x, c.y, c.n);
    CB_CHECK(cudaGetLastError());
    block_norms<<<c.blocks, BLOCK, 0, stream>>>(c.y, c.partial, c.n);
    CB_CHECK(cudaGetLastError());
    finish_norm<<<1, BLOCK, 0, stream>>>(c.partial, c.blocks, c.scale, c.lambda);
    CB_CHECK(cudaGetLastError());
    normalize<<<c.blocks, BLOCK, 0, stream>>>(c.y, c.scale, c.x, c.n);
    CB_CHECK(cudaGetLastError());
  }
}
// ANCHOR_END: steps
