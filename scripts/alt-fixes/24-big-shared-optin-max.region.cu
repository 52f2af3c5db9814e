// ANCHOR: bug
// Another fix: opt in once to the device's whole per-block maximum, read from the device
// (cudaDevAttrMaxSharedMemoryPerBlockOptin: 232,448 bytes on sm_90), and refuse loudly a histogram
// that could never fit instead of launching it.
void launch_histogram(const unsigned* d_values, unsigned* d_counts, int n, int bins) {
  static int max_optin = 0;
  if (max_optin == 0) {
    int device;
    CB_CHECK(cudaGetDevice(&device));
    CB_CHECK(cudaDeviceGetAttribute(&max_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    CB_CHECK(cudaFuncSetAttribute(block_histogram, cudaFuncAttributeMaxDynamicSharedMemorySize, max_optin));
  }
  const size_t shared_bytes = static_cast<size_t>(bins) * sizeof(unsigned);
  if (shared_bytes > static_cast<size_t>(max_optin)) {
    std::fprintf(stderr, "%d bins need %zu bytes of shared memory; this GPU allows %d per block\n", bins, shared_bytes, max_optin);
    std::exit(3);
  }
  const int blocks = std::max(1, std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS));
  block_histogram<<<blocks, BLOCK, shared_bytes>>>(d_values, d_counts, n, bins);
  CB_CHECK(cudaGetLastError());
}
// ANCHOR_END: bug
