// ANCHOR: bug
// The other fix from the hints: keep shared memory, but order every read before the next write
// with __syncwarp(), which is a barrier (and memory fence) for the lanes of one warp.
__device__ float warp_sum(float* s, int t) {
  float v = s[t] + s[t + 32];
  for (int offset = 16; offset > 0; offset >>= 1) {
    __syncwarp();
    s[t] = v;
    __syncwarp();
    v += s[t + offset];
  }
  return v;
}
// ANCHOR_END: bug
