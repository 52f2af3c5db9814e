// 60-scan: the marked region of the untouched exercises/60-scan/scan.cu: `reset` restores it, `list`
// compares against it and the book shows it.
// ANCHOR: kernel
// One pass: out[i] = in[i] + in[i - d]. After the passes d = 1, 2, 4, ... < n, element i holds the
// sum of x[0 .. i]. The passes ping-pong between y and tmp, so that no pass reads what it writes,
// counted back from the last one, which writes y.
__global__ void scan_pass(const float* in, float* out, int n, int d) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i >= d ? in[i] + in[i - d] : in[i];
}

void launch_scan(const float* x, float* y, float* tmp, int n) {
  if (n <= 0) return;
  int passes = 1;  // n = 1: one pass copies x to y
  while ((1LL << passes) < n) passes++;
  const float* in = x;
  for (int p = 0; p < passes; p++) {
    float* out = (passes - 1 - p) % 2 == 0 ? y : tmp;
    scan_pass<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(in, out, n, 1 << p);
    in = out;
  }
}
// ANCHOR_END: kernel
