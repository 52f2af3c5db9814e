// ANCHOR: bug
// Another fix: no event. The host waits for `filter` to finish smooth before it launches detrend on
// `detect`: cudaStreamSynchronize returns when everything queued on `filter` so far is done, so every
// level is written before detrend is even queued. It costs the host thread the wait (the time of
// smooth), which the event spared it: the host could not queue more work meanwhile.
void smooth_then_detrend(const float* d_x, float* d_level, float* d_y, int channels, int steps,
                         cudaStream_t filter, cudaStream_t detect) {
  const size_t n = static_cast<size_t>(channels) * steps;
  smooth<<<(channels + BLOCK - 1) / BLOCK, BLOCK, 0, filter>>>(d_x, d_level, channels, steps);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaStreamSynchronize(filter));  // the levels are written
  detrend<<<static_cast<unsigned>((n + BLOCK - 1) / BLOCK), BLOCK, 0, detect>>>(d_x, d_level, d_y, n);
  CB_CHECK(cudaGetLastError());
}
// ANCHOR_END: bug
