// ANCHOR: bug
// A half-fix: the copy is checked, but its size is still counted in the design's doubles. The
// filters of up to 128 taps work as before; a longer one now stops at this line with "invalid
// argument" instead of running on zeros: the right place, still a failure.
void upload_taps(const double* design, int taps) {
  std::vector<float> c(MAX_TAPS, 0.0f);
  for (int k = 0; k < taps; ++k) c[k] = static_cast<float>(design[k]);
  CB_CHECK(cudaMemcpyToSymbol(coef, c.data(), taps * sizeof(design[0])));
}
// ANCHOR_END: bug
