// 24-big-shared: the marked regions of the untouched exercises/24-big-shared/histogram.cu. The pristine exercise is
// solutions/24-big-shared/histogram.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// One private histogram per block, bins * 4 bytes of shared memory: an H100 SM has 228 KB of it,
// so even 50,000 bins fit.
void launch_histogram(const unsigned* d_values, unsigned* d_counts, int n, int bins) {
  const size_t shared_bytes = static_cast<size_t>(bins) * sizeof(unsigned);
  const int blocks = std::max(1, std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS));
  block_histogram<<<blocks, BLOCK, shared_bytes>>>(d_values, d_counts, n, bins);
}
// ANCHOR_END: bug
