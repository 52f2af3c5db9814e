// 30-mbarrier-count: the marked regions of the untouched exercises/30-mbarrier-count/dot.cu. The pristine exercise is
// solutions/30-mbarrier-count/dot.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
  // ANCHOR: bug
  if (threadIdx.x == 0) {
    // Every thread of the block arrives once per tile, and one more arrival stands for the copies.
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
      token = cuda::device::barrier_arrive_tx(bar, 1, 2 * bulk * sizeof(float));
    } else {
      token = bar.arrive();
    }
    bar.wait(std::move(token));  // every arrival and every byte of the tile is in
    // ANCHOR_END: bug
