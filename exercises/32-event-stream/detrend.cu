// 32-event-stream: sensor recordings detrended in two stages, on two streams.
//
// `steps` samples of each of `channels` sensors, stored sample by sample: sample t of channel c at
// x[t * channels + c]. Stage 1, `smooth`, follows each channel's slowly moving level with an
// exponential moving average, level[t] = level[t - 1] + ALPHA * (x[t] - level[t - 1]), from
// level[0] = x[0]: one thread per channel walks through its samples in order, since each level needs
// the one before it. Stage 2, `detrend`, subtracts the level from every sample, one thread per
// sample: y = x - level is the fast part of the signal, what a detector downstream looks at.
//
// The stages run on two streams, so that a pipeline of recordings can smooth the next one on
// `filter` while `detect` detrends this one; an event hands the levels from one stream to the other.
//
// Run it plainly and compare y with the reference. Run the check and see what the tools say.
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr float ALPHA = 1.0f / 64.0f;  // the share of the gap to a new sample that the level closes

// One thread per channel, through all its samples in order: a subtraction and a fused multiply-add
// per sample, each needing the one before, so a long recording takes milliseconds.
__global__ void smooth(const float* __restrict__ x, float* __restrict__ level, int channels, int steps) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  float s = x[c];
  level[c] = s;
  for (int t = 1; t < steps; t++) {
    const size_t i = static_cast<size_t>(t) * channels + c;
    s = fmaf(ALPHA, x[i] - s, s);
    level[i] = s;
  }
}

// One thread per sample: the sample minus its channel's level at that moment.
__global__ void detrend(const float* x, const float* level, float* y, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] - level[i];
}

// ANCHOR: bug
// Smooth on `filter`, detrend on `detect`. `detect` must not start before every level is written:
// an event marks the point where they are, and `detect` waits for that point.
void smooth_then_detrend(const float* d_x, float* d_level, float* d_y, int channels, int steps,
                         cudaStream_t filter, cudaStream_t detect) {
  const size_t n = static_cast<size_t>(channels) * steps;
  cudaEvent_t smoothed;
  CB_CHECK(cudaEventCreateWithFlags(&smoothed, cudaEventDisableTiming));
  smooth<<<(channels + BLOCK - 1) / BLOCK, BLOCK, 0, filter>>>(d_x, d_level, channels, steps);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaEventRecord(smoothed, detect));  // the levels are written
  CB_CHECK(cudaStreamWaitEvent(detect, smoothed, 0));
  detrend<<<static_cast<unsigned>((n + BLOCK - 1) / BLOCK), BLOCK, 0, detect>>>(d_x, d_level, d_y, n);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaEventDestroy(smoothed));
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int channels = static_cast<int>(io.param("channels"));
  const int steps = static_cast<int>(io.param("steps"));
  const size_t n = static_cast<size_t>(channels) * steps;
  if (n == 0) return;
  const size_t bytes = n * sizeof(float);

  float *d_x, *d_level, *d_y;
  CB_CHECK(cudaMalloc(&d_x, bytes));
  CB_CHECK(cudaMalloc(&d_level, bytes));
  CB_CHECK(cudaMalloc(&d_y, bytes));
  CB_CHECK(cudaMemcpy(d_x, io.input<float>("x"), bytes, cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemset(d_level, 0, bytes));  // zeros until smooth writes the levels

  // CUDA loads a kernel at its first launch (lazy loading), and a load may wait for the work already
  // on the GPU, which would order the two stages whatever the streams say: load both now.
  cudaFuncAttributes attributes;
  CB_CHECK(cudaFuncGetAttributes(&attributes, smooth));
  CB_CHECK(cudaFuncGetAttributes(&attributes, detrend));

  // Non-blocking streams: they neither wait for the legacy default stream nor hold it up, so the
  // upload and the zeroing above, which ran there, must be finished before either stream starts.
  cudaStream_t filter, detect;
  CB_CHECK(cudaStreamCreateWithFlags(&filter, cudaStreamNonBlocking));
  CB_CHECK(cudaStreamCreateWithFlags(&detect, cudaStreamNonBlocking));
  CB_CHECK(cudaDeviceSynchronize());

  smooth_then_detrend(d_x, d_level, d_y, channels, steps, filter, detect);

  CB_CHECK(cudaMemcpyAsync(io.output<float>("y"), d_y, bytes, cudaMemcpyDeviceToHost, detect));
  CB_CHECK(cudaStreamSynchronize(detect));
  CB_CHECK(cudaStreamSynchronize(filter));
  CB_CHECK(cudaStreamDestroy(filter));
  CB_CHECK(cudaStreamDestroy(detect));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_level));
  CB_CHECK(cudaFree(d_y));
}
