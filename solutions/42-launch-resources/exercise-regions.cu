// 42-launch-resources: the marked regions of the untouched exercises/42-launch-resources/jump.cu. The pristine exercise is
// solutions/42-launch-resources/jump.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// Big blocks: 1024 threads, the most a block may have, and a quarter as many blocks to schedule.
constexpr int BLOCK = 1024;

__global__ void jump_ahead(const double* a, const double* b, const double* x, double* y, int count, int squarings) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= count) return;
  // Entry (i, j) of element e's matrix is a[(4 * i + j) * count + e]: a warp reads 32 neighbours.
  double a00 = a[0 * count + e], a01 = a[1 * count + e], a02 = a[2 * count + e], a03 = a[3 * count + e];
  double a10 = a[4 * count + e], a11 = a[5 * count + e], a12 = a[6 * count + e], a13 = a[7 * count + e];
  double a20 = a[8 * count + e], a21 = a[9 * count + e], a22 = a[10 * count + e], a23 = a[11 * count + e];
  double a30 = a[12 * count + e], a31 = a[13 * count + e], a32 = a[14 * count + e], a33 = a[15 * count + e];
  double b0 = b[0 * count + e], b1 = b[1 * count + e], b2 = b[2 * count + e], b3 = b[3 * count + e];
  for (int k = 0; k < squarings; ++k) {
    // b <- A b + b and A <- A A, both from the old A.
    const double c0 = a00 * b0 + a01 * b1 + a02 * b2 + a03 * b3 + b0;
    const double c1 = a10 * b0 + a11 * b1 + a12 * b2 + a13 * b3 + b1;
    const double c2 = a20 * b0 + a21 * b1 + a22 * b2 + a23 * b3 + b2;
    const double c3 = a30 * b0 + a31 * b1 + a32 * b2 + a33 * b3 + b3;
    const double p00 = a00 * a00 + a01 * a10 + a02 * a20 + a03 * a30;
    const double p01 = a00 * a01 + a01 * a11 + a02 * a21 + a03 * a31;
    const double p02 = a00 * a02 + a01 * a12 + a02 * a22 + a03 * a32;
    const double p03 = a00 * a03 + a01 * a13 + a02 * a23 + a03 * a33;
    const double p10 = a10 * a00 + a11 * a10 + a12 * a20 + a13 * a30;
    const double p11 = a10 * a01 + a11 * a11 + a12 * a21 + a13 * a31;
    const double p12 = a10 * a02 + a11 * a12 + a12 * a22 + a13 * a32;
    const double p13 = a10 * a03 + a11 * a13 + a12 * a23 + a13 * a33;
    const double p20 = a20 * a00 + a21 * a10 + a22 * a20 + a23 * a30;
    const double p21 = a20 * a01 + a21 * a11 + a22 * a21 + a23 * a31;
    const double p22 = a20 * a02 + a21 * a12 + a22 * a22 + a23 * a32;
    const double p23 = a20 * a03 + a21 * a13 + a22 * a23 + a23 * a33;
    const double p30 = a30 * a00 + a31 * a10 + a32 * a20 + a33 * a30;
    const double p31 = a30 * a01 + a31 * a11 + a32 * a21 + a33 * a31;
    const double p32 = a30 * a02 + a31 * a12 + a32 * a22 + a33 * a32;
    const double p33 = a30 * a03 + a31 * a13 + a32 * a23 + a33 * a33;
    a00 = p00, a01 = p01, a02 = p02, a03 = p03;
    a10 = p10, a11 = p11, a12 = p12, a13 = p13;
    a20 = p20, a21 = p21, a22 = p22, a23 = p23;
    a30 = p30, a31 = p31, a32 = p32, a33 = p33;
    b0 = c0, b1 = c1, b2 = c2, b3 = c3;
  }
  const double x0 = x[0 * count + e], x1 = x[1 * count + e], x2 = x[2 * count + e], x3 = x[3 * count + e];
  y[0 * count + e] = a00 * x0 + a01 * x1 + a02 * x2 + a03 * x3 + b0;
  y[1 * count + e] = a10 * x0 + a11 * x1 + a12 * x2 + a13 * x3 + b1;
  y[2 * count + e] = a20 * x0 + a21 * x1 + a22 * x2 + a23 * x3 + b2;
  y[3 * count + e] = a30 * x0 + a31 * x1 + a32 * x2 + a33 * x3 + b3;
}

void launch_jump(const double* d_a, const double* d_b, const double* d_x, double* d_y, int count, int squarings) {
  jump_ahead<<<(count + BLOCK - 1) / BLOCK, BLOCK>>>(d_a, d_b, d_x, d_y, count, squarings);
}
// ANCHOR_END: bug
