// 01-index: the marked regions of the untouched exercises/01-index/transpose.cu. The pristine exercise is
// solutions/01-index/transpose.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
    // ANCHOR: bug
    if (x < rows && y + j < cols) out[(size_t)(y + j) * cols + x] = tile[threadIdx.x][threadIdx.y + j];
    // ANCHOR_END: bug
