  // ANCHOR: bug
  // Another fix: keep indexing in floats, with the row stride in floats. cudaMallocPitch's pitch
  // is a multiple of its alignment (far more than 4 bytes), so pitch / sizeof(float) is exact.
  const size_t img_stride = img_pitch / sizeof(float), out_stride = out_pitch / sizeof(float);
  float sum = 0.0f;
  for (int dr = -1; dr <= 1; dr++) {
    const int rr = min(max(r + dr, 0), height - 1);
    const float* row = img + rr * img_stride;
    for (int dc = -1; dc <= 1; dc++) sum += row[min(max(c + dc, 0), width - 1)];
  }
  out[r * out_stride + c] = sum / 9.0f;
  // ANCHOR_END: bug
