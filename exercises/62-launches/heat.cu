// 62-launches: heat diffusion along `rods` independent rods of `cells` cells each (row-major: cell i
// of rod r at r * cells + i), e.g. a row of cooling fins. Each of `steps` explicit time steps moves
// every interior cell towards its neighbours, new = u + 0.25 (left - 2 u + right); the two end cells
// of a rod are held at their starting temperature. A rod is one block of threads, so `cells` must
// lie in 1..=1024.
//
// The answer is right. It is slow: count the launches per time step, and set what each costs the
// host against the microsecond or two of work each kernel does.
//
// `check` clocks the whole call of cb_run and profiles the kernels that exercise.toml's [timing]
// names: step, copy_back and diffuse. Give your kernels names from that list.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include "cudabugs.cuh"

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

void cb_run(cb::Io& io) {
  const int rods = static_cast<int>(io.param("rods"));
  const int cells = static_cast<int>(io.param("cells"));
  const int steps = static_cast<int>(io.param("steps"));
  if (cells < 1 || cells > 1024) {
    std::fprintf(stderr, "62-launches: cells = %d; a rod is one block, so it must lie in 1..=1024\n", cells);
    std::exit(2);
  }
  // Stream-ordered allocations from a pool that keeps its memory between calls: cudaMalloc and
  // cudaFree cost this call 0.2-0.4 ms on an H100, varying more than the launches cost.
  static bool pool_kept = false;
  if (!pool_kept) {
    cudaMemPool_t pool;
    uint64_t keep_all = UINT64_MAX;
    CB_CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    CB_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
    pool_kept = true;
  }
  const size_t bytes = static_cast<size_t>(rods) * cells * sizeof(float);
  float *d_u, *d_next;
  CB_CHECK(cudaMallocAsync(&d_u, bytes, 0));
  CB_CHECK(cudaMallocAsync(&d_next, bytes, 0));
  CB_CHECK(cudaMemcpy(d_u, io.input<float>("u0"), bytes, cudaMemcpyHostToDevice));
  run_steps(d_u, d_next, rods, cells, steps);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(io.output<float>("u"), d_u, bytes, cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFreeAsync(d_u, 0));
  CB_CHECK(cudaFreeAsync(d_next, 0));
}
