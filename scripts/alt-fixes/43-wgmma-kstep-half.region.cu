    // ANCHOR: bug
    // A half-fix: the step is now bytes >> 4, but the bytes of kk halves in a row, as if a row of
    // the tile ran along k without a break (true of a swizzled layout, not of this one). It moves the
    // descriptors 32 bytes per slice: two rows down inside the first core matrices, not to the next
    // slice, 2048 (A) or 1024 (B) bytes on.
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      const uint64_t step = (kk * sizeof(__half)) >> 4;
      wgmma_m64n32k16(acc, desc_a + step, desc_b + step);
    }
    // ANCHOR_END: bug
