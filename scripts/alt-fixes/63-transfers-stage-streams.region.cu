// ANCHOR: pipeline
// Another fix: a stream per stage instead of a stream per chunk. Every copy in goes to one stream,
// every kernel to a second, every copy out to a third, and events hand each chunk on from stage to
// stage: chunk c's kernel waits for chunk c's copy in, its copy out for its kernel. Each stage works
// through the chunks in order, and the three stages work on different chunks at once.
__global__ void cool(const float* x, float* y, size_t n, int steps) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = cool_for(x[i], steps);
}

constexpr int CHUNKS = 16;

void cool_on_gpu(const float* h_x, float* h_y, size_t n, int steps) {
  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  cudaStream_t in, compute, out;
  for (cudaStream_t* s : {&in, &compute, &out}) CB_CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
  // One event per hand-over is enough: cudaStreamWaitEvent waits for the event's latest record at
  // the time of the call, so recording it again for the next chunk does not move an earlier wait.
  cudaEvent_t arrived, cooled;
  for (cudaEvent_t* e : {&arrived, &cooled}) CB_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  const size_t chunk = (n + CHUNKS - 1) / CHUNKS;
  for (size_t first = 0; first < n; first += chunk) {
    const size_t len = std::min(chunk, n - first);
    CB_CHECK(cudaMemcpyAsync(d_x + first, h_x + first, len * sizeof(float), cudaMemcpyHostToDevice, in));
    CB_CHECK(cudaEventRecord(arrived, in));
    CB_CHECK(cudaStreamWaitEvent(compute, arrived, 0));
    cool<<<static_cast<unsigned>((len + BLOCK - 1) / BLOCK), BLOCK, 0, compute>>>(d_x + first, d_y + first, len, steps);
    CB_CHECK(cudaGetLastError());
    CB_CHECK(cudaEventRecord(cooled, compute));
    CB_CHECK(cudaStreamWaitEvent(out, cooled, 0));
    CB_CHECK(cudaMemcpyAsync(h_y + first, d_y + first, len * sizeof(float), cudaMemcpyDeviceToHost, out));
  }
  for (cudaStream_t s : {in, compute, out}) {
    CB_CHECK(cudaStreamSynchronize(s));
    CB_CHECK(cudaStreamDestroy(s));
  }
  for (cudaEvent_t e : {arrived, cooled}) CB_CHECK(cudaEventDestroy(e));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
// ANCHOR_END: pipeline
