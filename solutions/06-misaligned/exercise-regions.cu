// 06-misaligned: the marked regions of the untouched exercises/06-misaligned/window.cu. The pristine exercise is
// solutions/06-misaligned/window.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// Four floats per thread: one 16-byte load, one 16-byte store. The tail that does not fill a
// float4 is copied one float at a time.
__global__ void copy_window(const float* src, float* dst, int len) {
  const int stride = gridDim.x * blockDim.x;
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  const int vectors = len / 4;
  for (int v = tid; v < vectors; v += stride) {
    const float4 f = reinterpret_cast<const float4*>(src)[v];
    float* out = dst + 4 * v;
    out[0] = f.x;
    out[1] = f.y;
    out[2] = f.z;
    out[3] = f.w;
  }
  for (int i = 4 * vectors + tid; i < len; i += stride) dst[i] = src[i];
}
// ANCHOR_END: bug
