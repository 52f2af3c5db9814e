// 63-transfers: Newton's law of cooling for a batch of bodies: body i starts at x[i] degrees Celsius
// in a room at 20 degrees and loses 1/1024 of its difference to the room in each time step; y[i] is
// its temperature after `steps` time steps. Each step is one fused multiply-add, computed in order
// so every bit matches the reference.
//
// The answer is right. It is slow: look at what the GPU's copy engines and its SMs do during the
// call, and when.
#include <algorithm>
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

// ANCHOR: pipeline
// One thread per body. At the timed run's 2560 steps the kernel takes about as long on the SMs as
// the copies of the temperatures over PCIe.
__global__ void cool(const float* x, float* y, size_t n, int steps) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = cool_for(x[i], steps);
}

constexpr int CHUNKS = 16;  // the pipeline fills and drains in about two chunks' time: 1/8 of the work
constexpr int STREAMS = 4;  // at least 3: a chunk coming in, one being cooled, one going out

// The same three steps per chunk, each chunk in its own stream (chunk c in stream c % STREAMS): a
// stream keeps a chunk's copy in, kernel and copy out in order, and different streams' work runs at
// once, so while chunk c is cooled chunk c + 1 comes in on one copy engine and chunk c - 1 goes out
// on the other. The copies are asynchronous because the host buffers are pinned. The streams are
// non-blocking: they neither wait for work in the legacy default stream nor hold it up.
void cool_on_gpu(const float* h_x, float* h_y, size_t n, int steps) {
  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  cudaStream_t streams[STREAMS];
  for (cudaStream_t& s : streams) CB_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // Rounded up: for n not a multiple of CHUNKS the last chunk is shorter, for n < CHUNKS every
  // chunk holds one body (and there are fewer than CHUNKS of them).
  const size_t chunk = (n + CHUNKS - 1) / CHUNKS;
  for (size_t first = 0, c = 0; first < n; first += chunk, c++) {
    const size_t len = std::min(chunk, n - first);
    const cudaStream_t s = streams[c % STREAMS];
    CB_CHECK(cudaMemcpyAsync(d_x + first, h_x + first, len * sizeof(float), cudaMemcpyHostToDevice, s));
    cool<<<static_cast<unsigned>((len + BLOCK - 1) / BLOCK), BLOCK, 0, s>>>(d_x + first, d_y + first, len, steps);
    CB_CHECK(cudaGetLastError());
    CB_CHECK(cudaMemcpyAsync(h_y + first, d_y + first, len * sizeof(float), cudaMemcpyDeviceToHost, s));
  }
  // Every chunk's copy out is done before the call returns and the buffers are freed.
  for (cudaStream_t s : streams) {
    CB_CHECK(cudaStreamSynchronize(s));
    CB_CHECK(cudaStreamDestroy(s));
  }
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
// ANCHOR_END: pipeline

void cb_run(cb::Io& io) {
  const size_t n = static_cast<size_t>(io.param("n"));
  const int steps = static_cast<int>(io.param("steps"));
  cool_on_gpu(io.input<float>("x"), io.output<float>("y"), n, steps);
}
