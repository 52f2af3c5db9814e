// 02-bounds: the marked regions of the untouched exercises/02-bounds/scale_bias_relu.cu. The pristine exercise is
// solutions/02-bounds/scale_bias_relu.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
  // ANCHOR: bug
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int c = (i / hw) % channels;
  y[i] = fmaxf(0.0f, x[i] * scale[c] + bias[c]);
  // ANCHOR_END: bug
