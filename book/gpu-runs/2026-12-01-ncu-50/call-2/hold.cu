// Experiment only (issue 50): can a second ncu process start its program while the first is
// profiling, and wait for its turn before its first kernel? argv: TAG KERNELS. Prints stamps
// (CLOCK_REALTIME): main, context ready; then waits for /tmp/hold/go-TAG before its first kernel;
// writes /tmp/hold/done-TAG after its last.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <unistd.h>
#include <cuda_runtime.h>
__global__ void spin(long long cycles, int* out) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {}
  out[threadIdx.x] = threadIdx.x;
}
static double now() { timespec t; clock_gettime(CLOCK_REALTIME, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char** argv) {
  std::string tag = argv[1]; int kernels = atoi(argv[2]);
  double main_at = now();
  int* d; cudaMalloc(&d, 1024 * sizeof(int)); cudaDeviceSynchronize();
  double ready_at = now();
  std::string go = "/tmp/hold/go-" + tag, done = "/tmp/hold/done-" + tag;
  while (access(go.c_str(), F_OK) != 0) usleep(1000);
  double go_at = now();
  for (int k = 0; k < kernels; ++k) { spin<<<132, 256>>>(20000000LL, d); cudaDeviceSynchronize(); }
  double done_at = now();
  FILE* f = fopen(done.c_str(), "w"); fclose(f);
  printf("%s main %.3f ready %.3f go %.3f done %.3f err %s\n", tag.c_str(), main_at, ready_at, go_at, done_at,
         cudaGetErrorString(cudaGetLastError()));
  return 0;
}
