// 16-uninit-shared: the marked regions of the untouched exercises/16-uninit-shared/blur.cu. The pristine exercise is
// solutions/16-uninit-shared/blur.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
  // ANCHOR: bug
  // Each thread loads its own pixel; the threads on the block's border load the frame next to them.
  tile[ty + 1][tx + 1] = pixel(img, width, height, r0 + ty, c0 + tx);
  if (tx == 0) tile[ty + 1][0] = pixel(img, width, height, r0 + ty, c0 - 1);
  if (tx == TILE - 1) tile[ty + 1][TILE + 1] = pixel(img, width, height, r0 + ty, c0 + TILE);
  if (ty == 0) tile[0][tx + 1] = pixel(img, width, height, r0 - 1, c0 + tx);
  if (ty == TILE - 1) tile[TILE + 1][tx + 1] = pixel(img, width, height, r0 + TILE, c0 + tx);
  // ANCHOR_END: bug
