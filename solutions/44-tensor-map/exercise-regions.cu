// 44-tensor-map: the marked regions of the untouched exercises/44-tensor-map/tma_matmul.cu. The pristine exercise is
// solutions/44-tensor-map/tma_matmul.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// The tensor maps: A is m rows of k floats, pitch_a bytes from one row to the next; B is k rows of
// n floats, pitch_b bytes apart. Each copy moves one tile: BM x BK of A, BK x BN of B.
void make_tensor_maps(CUtensorMap* map_a, CUtensorMap* map_b, float* d_a, size_t pitch_a, float* d_b,
                      size_t pitch_b, int m, int n, int k) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  const cuuint32_t element_strides[2] = {1, 1};  // every element of the box, no skipping

  const cuuint64_t dims_a[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(m)};
  const cuuint64_t pitch_bytes_a[1] = {pitch_a};
  const cuuint32_t box_a[2] = {BM, BK};
  check_encode(encode(map_a, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, d_a, dims_a, pitch_bytes_a, box_a, element_strides,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
               "A");

  const cuuint64_t dims_b[2] = {static_cast<cuuint64_t>(n), static_cast<cuuint64_t>(k)};
  const cuuint64_t pitch_bytes_b[1] = {pitch_b};
  const cuuint32_t box_b[2] = {BK, BN};
  check_encode(encode(map_b, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, d_b, dims_b, pitch_bytes_b, box_b, element_strides,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
               "B");
}
// ANCHOR_END: bug
