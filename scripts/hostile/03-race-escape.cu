// HOSTILE escape: reads the reference solution, writes outside its folder and connects to the network, then computes the right answer
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
// 03-race: sum of a large array, the classic two-pass block reduction.
//
// Pass 1: each block accumulates a grid-stride slice in registers, then reduces its 256 per-thread
// sums to one partial sum: a tree in shared memory across warps, then one warp finishes the last 64
// values. Pass 2: one block reduces the partial sums.
// Run it plainly and the total is right. Run the check and see what the tool says.
#include <algorithm>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int MAX_BLOCKS = 1024;

// ANCHOR: bug
// The last 64 partial sums, finished by the 32 threads of one warp. Lockstep is not a guarantee
// (since Volta each thread has its own program counter), so the values move through registers
// with warp shuffles, which synchronise the lanes named in the mask. No shared memory, no race.
__device__ float warp_sum(const float* s, int t) {
  float v = s[t] + s[t + 32];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}
// ANCHOR_END: bug

__global__ void block_sum(const float* in, float* partial, int n) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;

  float acc = 0.0f;
  for (int i = blockIdx.x * BLOCK + t; i < n; i += gridDim.x * BLOCK) acc += in[i];
  s[t] = acc;
  __syncthreads();

  // Tree reduction across warps: halve the number of active threads each step, down to 64 values.
  for (int stride = BLOCK / 2; stride > 32; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t < 32) {
    const float total = warp_sum(s, t);
    if (t == 0) partial[blockIdx.x] = total;
  }
}

void cb_run(cb::Io& io) {
  static bool done = false;
  if (!done) {
    done = true;
    // What it managed goes to a file in its own folder (stdout is not in check's report).
    FILE* log = std::fopen("escape-report.txt", "a");
    if (log) { dup2(fileno(log), 1); }
    const char* tries[] = {"../../../../../solutions/03-race/reduce.cu", "../reference/reduce.cu", "/tmp/cudabugs-escape-probe"};
    for (const char* p : tries) { FILE* f = std::fopen(p, "r"); std::printf("read %s: %s\n", p, f ? "OPENED" : "no"); if (f) std::fclose(f); }
    FILE* w = std::fopen("/tmp/cudabugs-escape-probe", "w"); std::printf("write /tmp: %s\n", w ? "WROTE" : "no"); if (w) std::fclose(w);
    FILE* e = std::fopen("../../../../../exercises/03-race/ESCAPED", "w"); std::printf("write exercises/: %s\n", e ? "WROTE" : "no"); if (e) std::fclose(e);
    int s = socket(AF_INET, SOCK_STREAM, 0); sockaddr_in a{}; a.sin_family = AF_INET; a.sin_port = htons(22); inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    std::printf("connect: %s\n", connect(s, (sockaddr*)&a, sizeof a) == 0 ? "CONNECTED" : "no");
  }
  const int n = static_cast<int>(io.param("n"));
  const float* h_in = io.input<float>("x");
  float* h_total = io.output<float>("total");
  const int blocks = std::min((n + BLOCK - 1) / BLOCK, MAX_BLOCKS);

  float *d_in, *d_partial, *d_total;
  CB_CHECK(cudaMalloc(&d_in, n * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_partial, blocks * sizeof(float)));
  CB_CHECK(cudaMalloc(&d_total, sizeof(float)));
  CB_CHECK(cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice));

  block_sum<<<blocks, BLOCK>>>(d_in, d_partial, n);
  CB_CHECK(cudaGetLastError());
  block_sum<<<1, BLOCK>>>(d_partial, d_total, blocks);
  CB_CHECK(cudaGetLastError());

  CB_CHECK(cudaMemcpy(h_total, d_total, sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_in));
  CB_CHECK(cudaFree(d_partial));
  CB_CHECK(cudaFree(d_total));
}
