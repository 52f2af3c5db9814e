// 25-copy-direction: the marked regions of the untouched exercises/25-copy-direction/center.cu. The pristine exercise is
// solutions/25-copy-direction/center.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// The copies between the host and the device.
void to_device(void* dst, const void* src, size_t bytes) {
  cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
}

void to_host(void* dst, const void* src, size_t bytes) {
  cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
}
// ANCHOR_END: bug
