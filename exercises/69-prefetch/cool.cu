// 69-prefetch: Newton's law of cooling (63-transfers' computation) for racks of bodies, watched
// from the host. `racks` racks hold `rack` bodies each; body i starts at x[i] degrees Celsius in a
// room at 20 degrees and loses 1/1024 of its difference to the room in each time step. The GPU
// runs the simulation in `rounds` rounds of `steps` time steps, and after every round the host
// reads each rack's sensor, the temperature of the rack's first body, into the log:
// log[r * racks + k] is rack k's sensor after round r. y[i] is body i's temperature after the last
// round. Each step is one fused multiply-add, computed in order, so every bit matches the
// reference.
//
// The temperatures live in managed memory (cudaMallocManaged): one pointer that the kernels and
// the host's monitoring both use, and the driver moves each page to whichever side touches it.
// The answer is right. It is slow: look at where the pages of t are when the host reads the
// sensors, and where they are when the next round's kernel starts.
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr float AMBIENT = 20.0f;        // the room, in degrees Celsius
constexpr float RATE = 1.0f / 1024.0f;  // the share of the gap to the room closed in one step

// `steps` explicit time steps of T <- T + RATE * (AMBIENT - T), written as one fused multiply-add,
// T * (1 - RATE) + RATE * AMBIENT; both constants are exact in float.
__device__ float cool_for(float t, int steps) {
  for (int s = 0; s < steps; s++) t = fmaf(t, 1.0f - RATE, RATE * AMBIENT);
  return t;
}

// One round, in place: one thread per body, `steps` fused multiply-adds on 8 bytes of memory.
// At the timed run's 3 Mi bodies and 64 steps, tens of microseconds once the pages are on the GPU.
__global__ void cool(float* t, size_t n, int steps) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) t[i] = cool_for(t[i], steps);
}

// ANCHOR: rounds
// The temperatures go into managed memory once; then each round the GPU cools every body, and the
// host reads each rack's sensor straight through the same pointer, no copy needed. The final
// temperatures come out with one copy at the end.
void cool_and_watch(const float* h_x, float* h_y, float* h_log, size_t racks, size_t rack,
                    int rounds, int steps) {
  const size_t n = racks * rack, bytes = n * sizeof(float);
  float* t;
  CB_CHECK(cudaMallocManaged(&t, bytes));
  CB_CHECK(cudaMemcpy(t, h_x, bytes, cudaMemcpyDefault));

  const unsigned blocks = static_cast<unsigned>((n + BLOCK - 1) / BLOCK);
  for (int r = 0; r < rounds; r++) {
    cool<<<blocks, BLOCK>>>(t, n, steps);
    CB_CHECK(cudaGetLastError());
    CB_CHECK(cudaDeviceSynchronize());
    for (size_t k = 0; k < racks; k++) h_log[r * racks + k] = t[k * rack];
  }

  CB_CHECK(cudaMemcpy(h_y, t, bytes, cudaMemcpyDefault));
  CB_CHECK(cudaFree(t));
}
// ANCHOR_END: rounds

void cb_run(cb::Io& io) {
  const size_t racks = static_cast<size_t>(io.param("racks"));
  const size_t rack = static_cast<size_t>(io.param("rack"));
  const int rounds = static_cast<int>(io.param("rounds"));
  const int steps = static_cast<int>(io.param("steps"));
  if (racks == 0 || rack == 0) return;
  cool_and_watch(io.input<float>("x"), io.output<float>("y"), io.output<float>("log"), racks, rack,
                 rounds, steps);
}
