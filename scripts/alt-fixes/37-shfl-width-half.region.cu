// ANCHOR: bug
// A half-fix: a butterfly (__shfl_xor_sync) instead of the shift down, the width still 16. Each
// 16-lane group still reduces on its own: lanes 0-15 never see lanes 16-31 (a lane may read an
// earlier group, never a later one; reading lane l ^ 16 from a later group returns its own value),
// so lane 0 ends with twice the sum of lanes 0-15, exactly as before.
__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset, 16);
  return v;
}
// ANCHOR_END: bug
