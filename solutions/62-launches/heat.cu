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
// One launch for every step. A block keeps its rod in shared memory, twice: each step reads one
// copy and writes the other, and one barrier per step is all the order a rod needs (rods share no
// cells). The rod is read from global memory once and written once, in place: each thread loads
// its own cell before the first barrier and stores it after the last.
constexpr int MAX_CELLS = 1024;

__global__ void diffuse(float* u, int cells, int steps) {
  __shared__ float rod[2][MAX_CELLS];
  const int i = threadIdx.x;
  const size_t at = static_cast<size_t>(blockIdx.x) * cells + i;
  rod[0][i] = u[at];
  __syncthreads();
  int cur = 0;
  for (int s = 0; s < steps; s++) {
    const float* v = rod[cur];
    // The original's expression, term for term, so that the rounding is the same.
    if (i == 0 || i == cells - 1) rod[cur ^ 1][i] = v[i];
    else rod[cur ^ 1][i] = v[i] + 0.25f * (v[i - 1] - 2.0f * v[i] + v[i + 1]);
    __syncthreads();
    cur ^= 1;
  }
  u[at] = rod[cur][i];
}

// d_next is not needed any more: the two copies of each rod live in shared memory.
void run_steps(float* d_u, float* /*d_next*/, int rods, int cells, int steps) {
  if (rods > 0 && steps > 0) diffuse<<<rods, cells>>>(d_u, cells, steps);
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
