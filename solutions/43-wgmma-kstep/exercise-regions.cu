// 43-wgmma-kstep: the marked regions of the untouched exercises/43-wgmma-kstep/wgmma_gemm.cu. The pristine exercise is
// solutions/43-wgmma-kstep/wgmma_gemm.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
    // ANCHOR: bug
    // One wgmma per 16-column slice of the tile: move both descriptors along k to the slice.
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wgmma_m64n32k16(acc, desc_a + kk, desc_b + kk);
    }
    // ANCHOR_END: bug
