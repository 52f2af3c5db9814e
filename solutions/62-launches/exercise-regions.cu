// 62-launches: the marked region of the untouched exercises/62-launches/heat.cu: `reset` restores it, `list`
// compares against it and the book shows it.
// ANCHOR: steps
// One block per rod, one thread per cell: `step` writes the rod's next state to `next`, and
// `copy_back` puts it back in `u` for the next step.
__global__ void step(const float* u, float* next, int cells) {
  const int i = threadIdx.x;
  const size_t at = static_cast<size_t>(blockIdx.x) * cells + i;
  if (i == 0 || i == cells - 1) next[at] = u[at];  // the ends are held fixed
  else next[at] = u[at] + 0.25f * (u[at - 1] - 2.0f * u[at] + u[at + 1]);
}

__global__ void copy_back(const float* next, float* u, int cells) {
  const size_t at = static_cast<size_t>(blockIdx.x) * cells + threadIdx.x;
  u[at] = next[at];
}

// Every launch is checked where it happens, so that a bad launch is reported at the step that
// made it (cudaGetLastError does not wait for the GPU).
void run_steps(float* d_u, float* d_next, int rods, int cells, int steps) {
  if (rods <= 0) return;
  for (int s = 0; s < steps; s++) {
    step<<<rods, cells>>>(d_u, d_next, cells);
    CB_CHECK(cudaGetLastError());
    copy_back<<<rods, cells>>>(d_next, d_u, cells);
    CB_CHECK(cudaGetLastError());
  }
}
// ANCHOR_END: steps
