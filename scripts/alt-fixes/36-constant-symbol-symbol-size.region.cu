// ANCHOR: bug
// Another fix: copy the whole padded vector, offset 0, after asking the runtime how large the
// symbol is (cudaGetSymbolSize: 1024 bytes here), so that a copy that could not fit is refused
// loudly before it is tried.
void upload_taps(const double* design, int taps) {
  std::vector<float> c(MAX_TAPS, 0.0f);
  for (int k = 0; k < taps; ++k) c[k] = static_cast<float>(design[k]);
  size_t symbol_bytes = 0;
  CB_CHECK(cudaGetSymbolSize(&symbol_bytes, coef));
  const size_t bytes = c.size() * sizeof(c[0]);
  if (bytes > symbol_bytes) {
    std::fprintf(stderr, "%zu bytes of taps do not fit the %zu bytes of coef\n", bytes, symbol_bytes);
    std::exit(3);
  }
  CB_CHECK(cudaMemcpyToSymbol(coef, c.data(), bytes, 0, cudaMemcpyHostToDevice));
}
// ANCHOR_END: bug
