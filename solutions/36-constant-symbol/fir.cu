// 36-constant-symbol: a FIR filter (smoothing, band-pass, matched filtering) over a long signal.
//
// The filter's taps come from a design done in double precision (the `h` input). The kernel reads
// them as floats from constant memory: every thread of a warp reads the same tap at the same time,
// one broadcast per warp, which is what the constant cache is built for. Output i is the sum of
// taps[k] * x[i + k - taps / 2], with zeros beyond the ends of the signal.
// Run it plainly and the short filters come out right. Run the check and see what the tool says.
#include <vector>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int MAX_TAPS = 256;

__constant__ float coef[MAX_TAPS];

__global__ void fir(const float* x, float* y, int n, int taps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int first = i - taps / 2;
  float acc = 0.0f;
  for (int k = 0; k < taps; ++k) {
    const int j = first + k;
    if (j >= 0 && j < n) acc = fmaf(coef[k], x[j], acc);
  }
  y[i] = acc;
}

// ANCHOR: bug
// The taps go to constant memory as floats: MAX_TAPS of them, zeros after the last tap. The size
// counts the bytes copied, floats: taps * 8 (the design's doubles) passes the end of coef beyond
// MAX_TAPS / 2 taps, and the call fails. Checked, so that a failure stops here.
void upload_taps(const double* design, int taps) {
  std::vector<float> c(MAX_TAPS, 0.0f);
  for (int k = 0; k < taps; ++k) c[k] = static_cast<float>(design[k]);
  CB_CHECK(cudaMemcpyToSymbol(coef, c.data(), taps * sizeof(float)));
}
// ANCHOR_END: bug

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const int taps = static_cast<int>(io.param("taps"));
  const float* h_x = io.input<float>("x");
  const double* h_design = io.input<double>("h");
  float* h_y = io.output<float>("y");
  if (taps < 1 || taps > MAX_TAPS) {
    std::fprintf(stderr, "%d taps: this filter takes 1 to %d\n", taps, MAX_TAPS);
    std::exit(3);
  }

  float *d_x, *d_y;
  CB_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_y, n * sizeof(float)));
  CB_CHECK(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  upload_taps(h_design, taps);
  fir<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(d_x, d_y, n, taps);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_x));
  CB_CHECK(cudaFree(d_y));
}
