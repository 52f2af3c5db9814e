// ANCHOR: bug
// A half-fix: every copy is checked now, so the program stops at the failing copy with the right
// line instead of computing with zeros, but to_host still says cudaMemcpyHostToDevice.
void to_device(void* dst, const void* src, size_t bytes) {
  CB_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

void to_host(void* dst, const void* src, size_t bytes) {
  CB_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}
// ANCHOR_END: bug
