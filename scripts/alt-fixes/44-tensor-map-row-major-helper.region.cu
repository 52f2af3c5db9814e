// ANCHOR: bug
// Another fix: one helper describes a row-major matrix in row-major words (rows, columns, pitch,
// tile rows, tile columns) and does the reversing itself, in one place: every per-dimension array
// of a tensor map lists the innermost (contiguous) dimension first, the box's too.
void encode_row_major(PFN_cuTensorMapEncodeTiled_v12000 encode, CUtensorMap* map, float* base, int rows,
                      int cols, size_t pitch, int tile_rows, int tile_cols, const char* what) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t pitch_bytes[1] = {pitch};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(tile_cols), static_cast<cuuint32_t>(tile_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  check_encode(encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, base, dims, pitch_bytes, box, element_strides,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
               what);
}

void make_tensor_maps(CUtensorMap* map_a, CUtensorMap* map_b, float* d_a, size_t pitch_a, float* d_b,
                      size_t pitch_b, int m, int n, int k) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  encode_row_major(encode, map_a, d_a, m, k, pitch_a, BM, BK, "A");  // A: m x k, tiles BM x BK
  encode_row_major(encode, map_b, d_b, k, n, pitch_b, BK, BN, "B");  // B: k x n, tiles BK x BN
}
// ANCHOR_END: bug
