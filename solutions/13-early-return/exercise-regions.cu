// 13-early-return: the marked regions of the untouched exercises/13-early-return/segsum.cu. The pristine exercise is
// solutions/13-early-return/segsum.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
  // ANCHOR: bug
  // Threads past the end of the signal have nothing to load: they are done.
  if (i >= n) return;
  s[t] = x[i];
  // ANCHOR_END: bug
