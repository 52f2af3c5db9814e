// 11-overflow: the marked regions of the untouched exercises/11-overflow/brightness.cu. The pristine exercise is
// solutions/11-overflow/brightness.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
  // ANCHOR: bug
  const int first = blockIdx.y * frame_len;  // the frame's first pixel
  const unsigned* frame = reinterpret_cast<const unsigned*>(pixels + first);
  unsigned acc = 0;
  for (int w = blockIdx.x * BLOCK + t; w < words; w += gridDim.x * BLOCK) acc += byte_sum(frame[w]);
  // ANCHOR_END: bug
