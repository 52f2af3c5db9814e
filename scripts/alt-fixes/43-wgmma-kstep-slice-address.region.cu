    // ANCHOR: bug
    // Another fix: no arithmetic on descriptors at all. Build each slice's descriptor from the
    // slice's own address: the slice starting at column kk begins kk * BM halves into the A tile
    // and kk * BN halves into the B tile, and matrix_descriptor does the >> 4 itself.
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wgmma_m64n32k16(acc, matrix_descriptor(sa + kk * BM), matrix_descriptor(sb + kk * BN));
    }
    // ANCHOR_END: bug
