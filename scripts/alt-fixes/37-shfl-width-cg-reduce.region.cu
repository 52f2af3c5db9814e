// ANCHOR: bug
// Another fix: let cooperative groups reduce. cg::reduce over a 32-thread tile of the block adds
// the values of all 32 lanes and hands every lane the total; the tile's size is a template
// argument, checked at compile time, so no width can be left behind.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

__device__ float warp_sum(float v) {
  namespace cg = cooperative_groups;
  const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  return cg::reduce(warp, v, cg::plus<float>());
}
// ANCHOR_END: bug
