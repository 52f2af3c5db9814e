// 71-constant-divergence: the marked regions of the untouched exercises/71-constant-divergence/curve.cu. The pristine exercise is
// solutions/71-constant-divergence/curve.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: kernel
// The table in constant memory: read-only for the whole launch, cached on every SM, and the
// memory CUDA offers for exactly this, parameters that every thread reads.
__constant__ float curve[SEGMENTS + 1];

__global__ void apply_curve(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float u = fminf(fmaxf(x[i], 0.0f), 1.0f) * SEGMENTS;
    const int k = min(static_cast<int>(u), SEGMENTS - 1);
    const float f = u - static_cast<float>(k);
    y[i] = fmaf(f, curve[k + 1] - curve[k], curve[k]);
  }
}

void run_curve(const float* h_curve, const float* d_x, float* d_y, int n, int blocks) {
  CB_CHECK(cudaMemcpyToSymbol(curve, h_curve, sizeof(curve)));
  apply_curve<<<blocks, BLOCK>>>(d_x, d_y, n);
  CB_CHECK(cudaGetLastError());
}
// ANCHOR_END: kernel
