  // ANCHOR: bug
  if (threadIdx.x == 0) {
    // Another fix: keep one arrival more than there are threads, and let the copying thread make
    // it: it arrives twice, once for itself and once for the copies (barrier_arrive_tx(bar, 2, ...)).
    init(&bar, blockDim.x + 1);
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
      token = cuda::device::barrier_arrive_tx(bar, 2, 2 * bulk * sizeof(float));
    } else {
      token = bar.arrive(threadIdx.x == 0 ? 2 : 1);
    }
    bar.wait(std::move(token));  // every arrival and every byte of the tile is in
    // ANCHOR_END: bug
