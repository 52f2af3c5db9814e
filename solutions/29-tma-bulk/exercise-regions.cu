// 29-tma-bulk: the marked regions of the untouched exercises/29-tma-bulk/bulk.cu. The pristine exercise is
// solutions/29-tma-bulk/bulk.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
    // ANCHOR: bug
    if (threadIdx.x == 0) {
      // One copy of the tile; the barrier expects its bytes as well as the block's arrivals.
      cde::cp_async_bulk_global_to_shared(tile, x + base, sizeof(tile), bar);
      token = cuda::device::barrier_arrive_tx(bar, 1, sizeof(tile));
    } else {
      token = bar.arrive();
    }
    bar.wait(std::move(token));
    for (int j = threadIdx.x; j < len; j += blockDim.x) y[base + j] = tile[j] * tile[j] + 1.0f;
    // ANCHOR_END: bug
