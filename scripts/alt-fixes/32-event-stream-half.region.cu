// ANCHOR: bug
// A half-fix: the event is now recorded in `filter`, the stream of smooth, but before smooth's launch.
// An event completes when its stream reaches it, and `filter` reaches this one at once (nothing is
// queued on it before), so `detect` waits for nothing and detrend still reads the zeros of the
// levels that smooth has not written yet.
void smooth_then_detrend(const float* d_x, float* d_level, float* d_y, int channels, int steps,
                         cudaStream_t filter, cudaStream_t detect) {
  const size_t n = static_cast<size_t>(channels) * steps;
  cudaEvent_t smoothed;
  CB_CHECK(cudaEventCreateWithFlags(&smoothed, cudaEventDisableTiming));
  CB_CHECK(cudaEventRecord(smoothed, filter));
  smooth<<<(channels + BLOCK - 1) / BLOCK, BLOCK, 0, filter>>>(d_x, d_level, channels, steps);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaStreamWaitEvent(detect, smoothed, 0));
  detrend<<<static_cast<unsigned>((n + BLOCK - 1) / BLOCK), BLOCK, 0, detect>>>(d_x, d_level, d_y, n);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaEventDestroy(smoothed));
}
// ANCHOR_END: bug
