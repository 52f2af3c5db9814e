// 33-pinned-reuse: where a comet is on its orbit at n moments, by Kepler's equation.
//
// At moment i the comet's mean anomaly m[i] is known: the angle, in radians from perihelion, that a
// body on a circular orbit of the same period would have swept by then, growing evenly with time.
// Its eccentric anomaly E, from which its position follows (x = cos E - e, y = sqrt(1 - e^2) sin E
// in units of the semi-major axis), solves Kepler's equation m = E - e sin E. The kernel solves it
// by fixed-point iteration, E <- m + e sin E from E = m, one thread per moment: each step shrinks
// the error by a factor of at most e = 0.99 (this comet's eccentricity), so ITERS = 2048 steps take
// any start within float precision of the answer (0.99^2048 is about 1e-9).
//
// The anomalies arrive in ordinary (pageable) host memory, and a copy from pageable memory is slow
// and holds the host thread until it is done. So they go to the GPU in chunks through a small
// pinned staging buffer: the host copies a chunk into it, an asynchronous copy takes it to the GPU
// and the chunk's kernel runs, both in one stream, while the host goes on to the next chunk.
//
// Run it plainly and compare the anomalies with the reference. Run the check and see what the
// tools say.
#include <algorithm>
#include <cstring>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int CHUNK = 32768;      // floats per fill of the staging buffer: 128 KB
constexpr int ITERS = 2048;       // fixed-point steps per moment
constexpr float ECC = 0.99f;      // the orbit's eccentricity

// One thread per moment: about a hundred microseconds for a chunk, mostly 2048 sines one after
// another.
__global__ void kepler(const float* m, float* anomaly, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float mi = m[i];
  float e = mi;
  for (int k = 0; k < ITERS; k++) e = fmaf(ECC, sinf(e), mi);
  anomaly[i] = e;
}

// ANCHOR: bug
// Upload the anomalies chunk by chunk through one pinned staging buffer, and solve each chunk as it
// arrives. The copies are asynchronous: the host fills the buffer, queues its copy and the chunk's
// kernel on `s`, and goes on with the next chunk while the GPU works.
void upload_and_solve(const float* h_m, float* d_m, float* d_anomaly, int n, cudaStream_t s) {
  float* staging;
  CB_CHECK(cudaMallocHost(&staging, CHUNK * sizeof(float)));
  for (int first = 0; first < n; first += CHUNK) {
    const int len = std::min(CHUNK, n - first);
    std::memcpy(staging, h_m + first, len * sizeof(float));
    CB_CHECK(cudaMemcpyAsync(d_m + first, staging, len * sizeof(float), cudaMemcpyHostToDevice, s));
    kepler<<<(len + BLOCK - 1) / BLOCK, BLOCK, 0, s>>>(d_m + first, d_anomaly + first, len);
    CB_CHECK(cudaGetLastError());
  }
  CB_CHECK(cudaStreamSynchronize(s));  // every copy is done before the buffer is freed
  CB_CHECK(cudaFreeHost(staging));
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  if (n == 0) return;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  float *d_m, *d_anomaly;
  CB_CHECK(cudaMalloc(&d_m, bytes));
  CB_CHECK(cudaMalloc(&d_anomaly, bytes));
  cudaStream_t s;
  CB_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  upload_and_solve(io.input<float>("m"), d_m, d_anomaly, n, s);

  CB_CHECK(cudaMemcpyAsync(io.output<float>("anomaly"), d_anomaly, bytes, cudaMemcpyDeviceToHost, s));
  CB_CHECK(cudaStreamSynchronize(s));
  CB_CHECK(cudaStreamDestroy(s));
  CB_CHECK(cudaFree(d_m));
  CB_CHECK(cudaFree(d_anomaly));
}
