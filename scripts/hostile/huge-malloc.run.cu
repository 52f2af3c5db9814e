// huge-malloc: asks for 4 TiB of device memory
// Spliced by scripts/gpu-verify.sh at the start of cb_run in solutions/03-race/reduce.cu.
  { void* p = nullptr; CB_CHECK(cudaMalloc(&p, size_t(4) << 40)); }
