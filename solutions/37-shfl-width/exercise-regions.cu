// 37-shfl-width: the marked regions of the untouched exercises/37-shfl-width/dots.cu. The pristine exercise is
// solutions/37-shfl-width/dots.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// The sum of v over the 32 lanes of the warp, in lane 0. Each step adds the value held `offset`
// lanes up: after offsets 16, 8, 4, 2, 1 lane 0 holds all 32.
__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset, 16);
  return v;
}
// ANCHOR_END: bug
