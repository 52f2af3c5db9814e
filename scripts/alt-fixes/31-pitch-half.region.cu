  // ANCHOR: bug
  // A half-fix: the rows are now pitch apart, but the pitch is a count of bytes and `img` points
  // to floats, so `img + rr * img_pitch` moves rr * img_pitch floats, four times too far. Row 1
  // lands on row 4; every row past a quarter of the image lies past the end of the allocation, and
  // memcheck reports the reads and writes out of bounds.
  float sum = 0.0f;
  for (int dr = -1; dr <= 1; dr++) {
    const int rr = min(max(r + dr, 0), height - 1);
    const float* row = img + rr * img_pitch;
    for (int dc = -1; dc <= 1; dc++) sum += row[min(max(c + dc, 0), width - 1)];
  }
  out[r * out_pitch + c] = sum / 9.0f;
  // ANCHOR_END: bug
