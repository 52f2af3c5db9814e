// ANCHOR: kernel
// Another fix: eight steps per iteration. window[j] holds the sample STEPS_PER_LOAD - 1 - j steps
// after the iteration's first, so the newest eight samples go to window[7] ... window[0] and output
// t0 + s reads window[7 - s + k]: every index is a constant, the window stays in registers, and it
// is shifted once per eight steps instead of once per step (a ring buffer with no run-time index).
constexpr int STEPS_PER_LOAD = 8;

__global__ void wma(const float* x, float* y, int steps, int channels) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  float window[TAPS + STEPS_PER_LOAD - 1];
  const float first = x[c];
#pragma unroll
  for (int j = 0; j < TAPS + STEPS_PER_LOAD - 1; j++) window[j] = first;
  for (int t0 = 0; t0 < steps; t0 += STEPS_PER_LOAD) {
#pragma unroll
    for (int s = 0; s < STEPS_PER_LOAD; s++) {
      const int t = min(t0 + s, steps - 1);  // past the end: a copy of the last sample, never stored
      window[STEPS_PER_LOAD - 1 - s] = x[static_cast<size_t>(t) * channels + c];
    }
#pragma unroll
    for (int s = 0; s < STEPS_PER_LOAD; s++) {
      float acc = 0.0f;
#pragma unroll
      for (int k = 0; k < TAPS; k++) acc += weight(k) * window[STEPS_PER_LOAD - 1 - s + k];
      if (t0 + s < steps) y[static_cast<size_t>(t0 + s) * channels + c] = acc;
    }
#pragma unroll
    for (int j = TAPS + STEPS_PER_LOAD - 2; j >= STEPS_PER_LOAD; j--) window[j] = window[j - STEPS_PER_LOAD];
  }
}

void launch_wma(const float* x, float* y, int steps, int channels) {
  if (steps > 0 && channels > 0) wma<<<(channels + BLOCK - 1) / BLOCK, BLOCK>>>(x, y, steps, channels);
}
// ANCHOR_END: kernel
