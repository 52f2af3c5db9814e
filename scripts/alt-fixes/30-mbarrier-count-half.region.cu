  // ANCHOR: bug
  if (threadIdx.x == 0) {
    // A half-fix: the arrival count is right now, but the copying thread below expects the bytes
    // of two whole tiles whatever the tile holds: the partial last tile brings fewer, and the
    // phase waits for the rest forever.
    init(&bar, blockDim.x);
    cde::fence_proxy_async_shared_cta();  // make the initialised barrier visible to the copy engine
  }
  __syncthreads();

  float acc = 0.0f;
  const int tiles = (n + TILE - 1) / TILE;
  for (int k = blockIdx.x; k < tiles; k += gridDim.x) {
    const int base = k * TILE;
    const int len = min(TILE, n - base);
    const int bulk = len / 4 * 4;  // whole 16-byte groups go by TMA, the last 0-3 floats by loads
    barrier::arrival_token token;
    if (threadIdx.x == 0 && bulk > 0) {
      cde::cp_async_bulk_global_to_shared(ta, a + base, bulk * sizeof(float), bar);
      cde::cp_async_bulk_global_to_shared(tb, b + base, bulk * sizeof(float), bar);
      token = cuda::device::barrier_arrive_tx(bar, 1, sizeof(ta) + sizeof(tb));
    } else {
      token = bar.arrive();
    }
    bar.wait(std::move(token));  // every arrival and every byte of the tile is in
    // ANCHOR_END: bug
