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
// Each rack's sensor, copied by the GPU into a small buffer of its own: one thread per rack.
__global__ void read_sensors(const float* t, size_t rack, size_t racks, float* sensors) {
  const size_t k = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < racks) sensors[k] = t[k * rack];
}

// The temperatures live on the GPU, which works on them every round, and the host never touches
// them: it reads the sensors from a buffer of their own. Each buffer is told where it belongs.
// t is prefetched to the GPU (cudaMemPrefetchAsync makes its pages there, before the copy writes
// them) and stays there. The sensors live in host memory (their preferred location) and are mapped
// for the GPU (accessed by it), so the kernel's few stores travel over PCIe into host memory and
// the host reads them where they are. No page moves between the rounds.
// (CUDA 13's cudaMemPrefetchAsync and cudaMemAdvise take a cudaMemLocation; CUDA 12's took a
// device number. The grader builds with nvcc 13.)
void cool_and_watch(const float* h_x, float* h_y, float* h_log, size_t racks, size_t rack,
                    int rounds, int steps) {
  const size_t n = racks * rack, bytes = n * sizeof(float);
  float *t, *sensors;
  CB_CHECK(cudaMallocManaged(&t, bytes));
  CB_CHECK(cudaMallocManaged(&sensors, racks * sizeof(float)));

  int device;
  CB_CHECK(cudaGetDevice(&device));
  cudaMemLocation gpu{}, host{};
  gpu.type = cudaMemLocationTypeDevice;
  gpu.id = device;
  host.type = cudaMemLocationTypeHost;  // the id is ignored for the host
  CB_CHECK(cudaMemPrefetchAsync(t, bytes, gpu, 0, 0));
  CB_CHECK(cudaMemAdvise(sensors, racks * sizeof(float), cudaMemAdviseSetPreferredLocation, host));
  CB_CHECK(cudaMemAdvise(sensors, racks * sizeof(float), cudaMemAdviseSetAccessedBy, gpu));
  CB_CHECK(cudaMemcpy(t, h_x, bytes, cudaMemcpyDefault));

  const unsigned blocks = static_cast<unsigned>((n + BLOCK - 1) / BLOCK);
  const unsigned rack_blocks = static_cast<unsigned>((racks + BLOCK - 1) / BLOCK);
  for (int r = 0; r < rounds; r++) {
    cool<<<blocks, BLOCK>>>(t, n, steps);
    CB_CHECK(cudaGetLastError());
    read_sensors<<<rack_blocks, BLOCK>>>(t, rack, racks, sensors);
    CB_CHECK(cudaGetLastError());
    CB_CHECK(cudaDeviceSynchronize());
    for (size_t k = 0; k < racks; k++) h_log[r * racks + k] = sensors[k];
  }

  CB_CHECK(cudaMemcpy(h_y, t, bytes, cudaMemcpyDefault));
  CB_CHECK(cudaFree(t));
  CB_CHECK(cudaFree(sensors));
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
