// 03-race: the marked regions of the untouched exercises/03-race/reduce.cu. The pristine exercise is
// solutions/03-race/reduce.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// The last 64 partial sums, finished by the 32 threads of one warp. A warp executes in lockstep,
// so no barrier is needed here, and `volatile` makes every += read and write shared
// memory instead of a register.
__device__ float warp_sum(volatile float* s, int t) {
  s[t] += s[t + 32];
  s[t] += s[t + 16];
  s[t] += s[t + 8];
  s[t] += s[t + 4];
  s[t] += s[t + 2];
  s[t] += s[t + 1];
  return s[t];
}
// ANCHOR_END: bug
