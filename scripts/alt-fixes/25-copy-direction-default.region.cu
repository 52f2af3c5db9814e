// ANCHOR: bug
// Another fix: with unified virtual addressing (every 64-bit CUDA process) the driver knows where
// each pointer lives, so cudaMemcpyDefault lets it infer the direction; one helper for both ways.
void copy(void* dst, const void* src, size_t bytes) {
  CB_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
}

void to_device(void* dst, const void* src, size_t bytes) { copy(dst, src, bytes); }

void to_host(void* dst, const void* src, size_t bytes) { copy(dst, src, bytes); }
// ANCHOR_END: bug
