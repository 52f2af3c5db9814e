    // ANCHOR: bug
    // A half-fix: the last tile's copy is cut to its length, but rounded up to the 16 bytes a
    // bulk copy moves: when n is not a multiple of 4 it still reads up to 12 bytes past the end.
    const int bytes = (len * static_cast<int>(sizeof(float)) + 15) / 16 * 16;
    if (threadIdx.x == 0) {
      cde::cp_async_bulk_global_to_shared(tile, x + base, bytes, bar);
      token = cuda::device::barrier_arrive_tx(bar, 1, bytes);
    } else {
      token = bar.arrive();
    }
    bar.wait(std::move(token));
    for (int j = threadIdx.x; j < len; j += blockDim.x) y[base + j] = tile[j] * tile[j] + 1.0f;
    // ANCHOR_END: bug
