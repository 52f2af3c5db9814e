// 31-pitch: the marked regions of the untouched exercises/31-pitch/blur.cu. The pristine exercise is
// solutions/31-pitch/blur.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
  // ANCHOR: bug
  // The 3x3 neighbourhood, rows and columns clamped at the border. The image is stored row after
  // row, so row rr starts rr * width floats in.
  float sum = 0.0f;
  for (int dr = -1; dr <= 1; dr++) {
    const int rr = min(max(r + dr, 0), height - 1);
    const float* row = img + rr * width;
    for (int dc = -1; dc <= 1; dc++) sum += row[min(max(c + dc, 0), width - 1)];
  }
  out[r * width + c] = sum / 9.0f;
  // ANCHOR_END: bug
