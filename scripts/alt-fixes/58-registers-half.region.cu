// ANCHOR: kernel
// A half-fix: the window is shifted so that every index is a constant (recent[k] is the sample k
// steps back), but the launch bounds stay. 8 blocks of 256 threads per SM leave 32 registers per
// thread for a window of 64 floats: ptxas spills what does not fit to local memory, and every step
// loads and stores the spilled part of the window again to shift it.
__global__ void __launch_bounds__(BLOCK, 8) wma(const float* x, float* y, int steps, int channels) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  float recent[TAPS];
  const float first = x[c];
#pragma unroll
  for (int k = 0; k < TAPS; k++) recent[k] = first;
  for (int t = 0; t < steps; t++) {
    const size_t at = static_cast<size_t>(t) * channels + c;
#pragma unroll
    for (int k = TAPS - 1; k > 0; k--) recent[k] = recent[k - 1];
    recent[0] = x[at];
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < TAPS; k++) acc += weight(k) * recent[k];
    y[at] = acc;
  }
}

void launch_wma(const float* x, float* y, int steps, int channels) {
  if (steps > 0 && channels > 0) wma<<<(channels + BLOCK - 1) / BLOCK, BLOCK>>>(x, y, steps, channels);
}
// ANCHOR_END: kernel
