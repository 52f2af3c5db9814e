// 32-event-stream: the marked regions of the untouched exercises/32-event-stream/detrend.cu. The pristine exercise is
// solutions/32-event-stream/detrend.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
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
