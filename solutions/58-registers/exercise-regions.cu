// 58-registers: the marked region of the untouched exercises/58-registers/wma.cu: `reset` restores it, `list`
// compares against it and the book shows it.
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
