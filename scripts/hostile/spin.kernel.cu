// spin: a kernel that never ends (every run must time out)
// Spliced by scripts/gpu-verify.sh into block_sum, after `const int t = threadIdx.x;`.
  if (n > 0) { volatile int forever = 1; while (forever) {} }
