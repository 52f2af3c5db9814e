// 58-registers: a weighted moving average over the last 64 samples of every channel of a
// multichannel recording (`steps` time steps of `channels` samples, time-major: sample t of channel c
// at t * channels + c), e.g. smoothing a sensor array's readings. The newest sample weighs 64, the
// one before it 63, ..., the oldest 1, normalised to sum to 1; before its first sample a channel is
// taken to hold that sample.
//
// The answer is right. It is slow: see where each thread keeps its channel's last 64 samples.
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int TAPS = 64;

// The weight of the sample k steps back: (TAPS - k) / (1 + 2 + ... + TAPS).
__host__ __device__ constexpr float weight(int k) { return (TAPS - k) * (2.0f / (TAPS * (TAPS + 1))); }

// ANCHOR: kernel
// One thread per channel walks down the time axis and keeps the channel's last TAPS samples in a
// ring buffer: the sample of step t goes to ring[t % TAPS], the oldest one is overwritten. The
// launch bounds ask ptxas for 8 blocks of 256 threads per SM, every warp slot of the SM filled.
__global__ void __launch_bounds__(BLOCK, 8) wma(const float* x, float* y, int steps, int channels) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  float ring[TAPS];
  for (int k = 0; k < TAPS; k++) ring[k] = x[c];
  for (int t = 0; t < steps; t++) {
    const size_t at = static_cast<size_t>(t) * channels + c;
    ring[t % TAPS] = x[at];
    float acc = 0.0f;
    for (int k = 0; k < TAPS; k++) acc += weight(k) * ring[(t - k + TAPS) % TAPS];
    y[at] = acc;
  }
}

void launch_wma(const float* x, float* y, int steps, int channels) {
  if (steps > 0 && channels > 0) wma<<<(channels + BLOCK - 1) / BLOCK, BLOCK>>>(x, y, steps, channels);
}
// ANCHOR_END: kernel

void cb_run(cb::Io& io) {
  const int steps = static_cast<int>(io.param("steps"));
  const int channels = static_cast<int>(io.param("channels"));
  const size_t len = static_cast<size_t>(steps) * channels;
  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, len * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, len * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, io.input<float>("x"), len * sizeof(float), cudaMemcpyHostToDevice));
  launch_wma(d_x, d_y, steps, channels);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(io.output<float>("y"), d_y, len * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
