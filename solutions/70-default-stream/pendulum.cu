// 70-default-stream: the period of a pendulum swung out to a large amplitude.
//
// A pendulum swung out to amplitude a (radians) takes longer per swing than the small-swing period
// T0 = 2 pi sqrt(L / g): T / T0 = (2 / pi) K(k) with k = sin(a / 2), where K is the complete elliptic
// integral of the first kind, K(k) = integral over [0, pi/2] of 1 / sqrt(1 - k^2 sin^2 phi). The
// kernel evaluates it with the midpoint rule on NODES points: y[i] = T / T0 is the mean of
// 1 / sqrt(1 - k^2 sin^2 phi) over the nodes. For this smooth periodic integrand the rule's error
// falls below float precision well before 64 nodes, for amplitudes up to MAX_AMPLITUDE (160
// degrees); a larger amplitude gets no answer: its y stays 0.
//
// The array goes through a pipeline of chunks over four streams, as in 63-transfers' fix: each
// chunk's results cleared, its amplitudes copied in, its periods computed and copied out, all in
// order, so that one chunk's copy in, another's kernel and a third's copy out can run at once.
//
// The answer is right. It is slow: look at the timeline of a call, and at what waits for what.
//
// `check` clocks the whole call of cb_run and profiles the kernel that exercise.toml's [timing]
// names, pendulum_period.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int NODES = 64;                   // midpoint-rule nodes on [0, pi/2]
constexpr float MAX_AMPLITUDE = 2.8f;       // radians, about 160 degrees
constexpr float HALF_PI = 1.57079632679f;

// One thread per pendulum: for each node a sine, a square root and a division, some 45
// instructions, 64 nodes a pendulum. (`nodes` comes as a parameter, so the compiler cannot fold
// the nodes' sines into constants: they are computed as the loop reaches them.)
__global__ void pendulum_period(const float* amplitude, float* ratio, size_t n, int nodes) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float a = amplitude[i];
  if (!(a <= MAX_AMPLITUDE)) return;  // out of the rule's range: ratio[i] keeps its 0
  const float k = sinf(0.5f * a);
  const float k2 = k * k;
  const float step = HALF_PI / nodes;
  float sum = 0.0f;
  for (int j = 0; j < nodes; j++) {
    const float s = sinf((j + 0.5f) * step);
    sum += 1.0f / sqrtf(1.0f - k2 * s * s);
  }
  ratio[i] = sum / nodes;
}

constexpr int CHUNKS = 16;
constexpr int STREAMS = 4;

// ANCHOR: pipeline
// Chunk c in stream c % STREAMS: its results cleared (the kernel writes only the amplitudes in its
// range), its amplitudes copied in, its periods computed and copied out, in that order in its stream,
// while the other streams work on other chunks. The host buffers are pinned (the harness allocates
// them with cudaMallocHost), so the copies are asynchronous. The clearing goes to the chunk's stream
// too: a cudaMemset without a stream runs on the legacy default stream, which waits for all the work
// queued on the streams made with cudaStreamCreate and holds up all the work queued after it.
void periods_on_gpu(const float* h_a, float* h_y, size_t n) {
  float *d_a, *d_y;
  CB_CHECK(cudaMalloc(&d_a, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  cudaStream_t streams[STREAMS];
  for (cudaStream_t& s : streams) CB_CHECK(cudaStreamCreate(&s));
  const size_t chunk = (n + CHUNKS - 1) / CHUNKS;
  for (size_t first = 0, c = 0; first < n; first += chunk, c++) {
    const size_t len = std::min(chunk, n - first);
    const cudaStream_t s = streams[c % STREAMS];
    CB_CHECK(cudaMemsetAsync(d_y + first, 0, len * sizeof(float), s));
    CB_CHECK(cudaMemcpyAsync(d_a + first, h_a + first, len * sizeof(float), cudaMemcpyHostToDevice, s));
    pendulum_period<<<static_cast<unsigned>((len + BLOCK - 1) / BLOCK), BLOCK, 0, s>>>(d_a + first, d_y + first, len, NODES);
    CB_CHECK(cudaGetLastError());
    CB_CHECK(cudaMemcpyAsync(h_y + first, d_y + first, len * sizeof(float), cudaMemcpyDeviceToHost, s));
  }
  // Every chunk's copy out is done before the call returns and the buffers are freed.
  for (cudaStream_t s : streams) {
    CB_CHECK(cudaStreamSynchronize(s));
    CB_CHECK(cudaStreamDestroy(s));
  }
  CB_CHECK(cudaFree(d_a));
  CB_CHECK(cudaFree(d_y));
}
// ANCHOR_END: pipeline

void cb_run(cb::Io& io) {
  const size_t n = static_cast<size_t>(io.param("n"));
  periods_on_gpu(io.input<float>("a"), io.output<float>("y"), n);
}
