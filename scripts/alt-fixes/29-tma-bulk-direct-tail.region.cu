    // ANCHOR: bug
    // Another fix: whole tiles go through TMA as before; the one partial tile at the end of the
    // input is read straight from global memory, no copy at all. The barrier still completes a
    // phase on that tile (every thread arrives, no bytes expected), so the phases stay in step.
    const bool whole = len == TILE;
    if (threadIdx.x == 0 && whole) {
      cde::cp_async_bulk_global_to_shared(tile, x + base, sizeof(tile), bar);
      token = cuda::device::barrier_arrive_tx(bar, 1, sizeof(tile));
    } else {
      token = bar.arrive();
    }
    bar.wait(std::move(token));
    for (int j = threadIdx.x; j < len; j += blockDim.x) {
      const float v = whole ? tile[j] : x[base + j];
      y[base + j] = v * v + 1.0f;
    }
    // ANCHOR_END: bug
