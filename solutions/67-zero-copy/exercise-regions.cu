// 67-zero-copy: the marked regions of the untouched exercises/67-zero-copy/relax.cu. The pristine exercise is
// solutions/67-zero-copy/relax.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: sweeps
// One sweep, one thread per cell; the cells past the ends are held at 0.
__global__ void jacobi_sweep(const float* f, const float* u, float* u_next, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float left = i > 0 ? u[i - 1] : 0.0f;
  const float right = i + 1 < n ? u[i + 1] : 0.0f;
  u_next[i] = 0.5f * (f[i] + left + right);
}

// `sweeps` sweeps (at least one) from u = 0. The harness's buffers are pinned, and pinned host
// memory is mapped into the GPU's address space: a kernel can read f where it lies and write the
// last sweep straight into h_u, with no copy and no device buffer for either. The sweeps in between
// go to two device buffers in turn.
void relax(const float* h_f, float* h_u, size_t n, int sweeps) {
  void *mapped_f, *mapped_u;
  CB_CHECK(cudaHostGetDevicePointer(&mapped_f, const_cast<float*>(h_f), 0));
  CB_CHECK(cudaHostGetDevicePointer(&mapped_u, h_u, 0));
  const float* f = static_cast<const float*>(mapped_f);
  float* out = static_cast<float*>(mapped_u);
  float *u, *next;
  CB_CHECK(cudaMallocAsync(&u, n * sizeof(float), 0));
  CB_CHECK(cudaMallocAsync(&next, n * sizeof(float), 0));
  CB_CHECK(cudaMemsetAsync(u, 0, n * sizeof(float), 0));
  const unsigned blocks = static_cast<unsigned>((n + BLOCK - 1) / BLOCK);
  for (int s = 0; s < sweeps; s++) {
    jacobi_sweep<<<blocks, BLOCK>>>(f, u, s == sweeps - 1 ? out : next, n);
    CB_CHECK(cudaGetLastError());
    std::swap(u, next);
  }
  CB_CHECK(cudaFreeAsync(u, 0));
  CB_CHECK(cudaFreeAsync(next, 0));
  CB_CHECK(cudaStreamSynchronize(0));  // the last sweep's stores to h_u have landed
}
// ANCHOR_END: sweeps
