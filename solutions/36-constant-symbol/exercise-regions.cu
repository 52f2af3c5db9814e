// 36-constant-symbol: the marked regions of the untouched exercises/36-constant-symbol/fir.cu. The pristine exercise is
// solutions/36-constant-symbol/fir.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// The taps go to constant memory as floats: MAX_TAPS of them, zeros after the last tap.
void upload_taps(const double* design, int taps) {
  std::vector<float> c(MAX_TAPS, 0.0f);
  for (int k = 0; k < taps; ++k) c[k] = static_cast<float>(design[k]);
  cudaMemcpyToSymbol(coef, c.data(), taps * sizeof(design[0]));
}
// ANCHOR_END: bug
