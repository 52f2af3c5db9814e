// cudabugs peak: what this GPU can do, measured rather than read from a datasheet.
//
//   peak [--kernels] [BYTES]
//
// Prints `key value` lines: device-to-device cudaMemcpy bandwidth, a float4 grid-stride copy
// kernel's bandwidth (both counting bytes read plus bytes written) and fp32 FMA throughput, each the
// median of 10 timed runs after 2 warm-ups (CUDA events); then cudaMemcpy between host and device
// from pinned and from pageable memory, and both ways at once. Under ncu the kernels `peak_copy` and
// `peak_fma` are timed again at ncu's clocks; `copy_bytes` and `fma_flops` say what one launch moves
// and computes; --kernels stops before the host-device copies (the run under ncu, which times
// only the kernels). Exit status: 0 ok, 2 bad usage, 3 a CUDA error.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "cudabugs.cuh"  // CB_CHECK


constexpr int CHAINS = 8;
constexpr int FMA_ITERS = 8192;

__global__ void peak_copy(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

// CHAINS independent FMA chains per thread keep every FP32 lane busy; the result is stored only if
// it takes an impossible value, so the compiler keeps the work and the kernel writes nothing.
__global__ void peak_fma(float* out, float seed) {
  float v[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; c++) v[c] = seed + threadIdx.x * 1e-3f + c;
  for (int i = 0; i < FMA_ITERS; i++) {
#pragma unroll
    for (int c = 0; c < CHAINS; c++) v[c] = fmaf(v[c], 0.9999f, 1e-4f);
  }
  float total = 0.0f;
#pragma unroll
  for (int c = 0; c < CHAINS; c++) total += v[c];
  if (total == -1.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = total;
}

template <class F> double median_ms(F launch) {
  cudaEvent_t a, b;
  CB_CHECK(cudaEventCreate(&a));
  CB_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 2; i++) launch();
  std::vector<float> ms;
  for (int i = 0; i < 10; i++) {
    CB_CHECK(cudaEventRecord(a));
    launch();
    CB_CHECK(cudaEventRecord(b));
    CB_CHECK(cudaEventSynchronize(b));
    float t;
    CB_CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CB_CHECK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  return (ms[4] + ms[5]) / 2;
}

int main(int argc, char** argv) {
  size_t bytes = size_t(1) << 30;
  // --kernels: the kernels only (the run under ncu, which times nothing else).
  const bool kernels_only = argc > 1 && !std::strcmp(argv[1], "--kernels");
  const int rest = kernels_only ? 2 : 1;
  if (argc > rest + 1) {
    std::fprintf(stderr, "usage: peak [--kernels] [BYTES]\n");
    return 2;
  }
  if (argc == rest + 1) bytes = std::strtoull(argv[rest], nullptr, 10) / 16 * 16;
  if (bytes == 0) {
    std::fprintf(stderr, "peak: BYTES must be at least 16\n");
    return 2;
  }
  int device, sms;
  cudaDeviceProp prop;
  CB_CHECK(cudaGetDevice(&device));
  CB_CHECK(cudaGetDeviceProperties(&prop, device));
  CB_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  float *in, *out;
  CB_CHECK(cudaMalloc(&in, bytes));
  CB_CHECK(cudaMalloc(&out, bytes));
  CB_CHECK(cudaMemset(in, 1, bytes));
  const size_t n4 = bytes / 16;
  const int copy_blocks = sms * 8, fma_blocks = sms * 8, threads = 256;

  const double memcpy_ms = median_ms([&] { CB_CHECK(cudaMemcpy(out, in, bytes, cudaMemcpyDeviceToDevice)); });
  const double copy_ms = median_ms([&] { peak_copy<<<copy_blocks, threads>>>(reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out), n4); });
  const double fma_ms = median_ms([&] { peak_fma<<<fma_blocks, threads>>>(out, 0.5f); });
  const double fma_flops = 2.0 * CHAINS * FMA_ITERS * double(fma_blocks) * threads;

  std::printf("device %s\n", prop.name);
  std::printf("sms %d\n", sms);
  std::printf("copy_bytes %.0f\n", 2.0 * bytes);
  std::printf("fma_flops %.0f\n", fma_flops);
  std::printf("memcpy_gbps %.1f\n", 2.0 * bytes / (memcpy_ms * 1e6));
  std::printf("copy_kernel_gbps %.1f\n", 2.0 * bytes / (copy_ms * 1e6));
  std::printf("fma_gflops %.1f\n", fma_flops / (fma_ms * 1e6));
  if (kernels_only) {
    CB_CHECK(cudaFree(in));
    CB_CHECK(cudaFree(out));
    return 0;
  }

  // Host-device copies, 256 MiB (or BYTES where less): pinned, pageable, and both ways at once.
  const size_t host_bytes = std::min(bytes, size_t(256) << 20);
  void *pinned_in, *pinned_out;
  CB_CHECK(cudaMallocHost(&pinned_in, host_bytes));
  CB_CHECK(cudaMallocHost(&pinned_out, host_bytes));
  std::vector<unsigned char> pageable_in(host_bytes, 1), pageable_out(host_bytes);
  std::memset(pinned_in, 1, host_bytes);
  auto gbps = [&](double ms) { return host_bytes / (ms * 1e6); };
  std::printf("h2d_pinned_gbps %.1f\n", gbps(median_ms([&] { CB_CHECK(cudaMemcpy(in, pinned_in, host_bytes, cudaMemcpyHostToDevice)); })));
  std::printf("d2h_pinned_gbps %.1f\n", gbps(median_ms([&] { CB_CHECK(cudaMemcpy(pinned_out, in, host_bytes, cudaMemcpyDeviceToHost)); })));
  std::printf("h2d_pageable_gbps %.1f\n", gbps(median_ms([&] { CB_CHECK(cudaMemcpy(in, pageable_in.data(), host_bytes, cudaMemcpyHostToDevice)); })));
  std::printf("d2h_pageable_gbps %.1f\n", gbps(median_ms([&] { CB_CHECK(cudaMemcpy(pageable_out.data(), in, host_bytes, cudaMemcpyDeviceToHost)); })));
  cudaStream_t up, down;
  CB_CHECK(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking));
  CB_CHECK(cudaStreamCreateWithFlags(&down, cudaStreamNonBlocking));
  const double both_ms = median_ms([&] {
    CB_CHECK(cudaMemcpyAsync(in, pinned_in, host_bytes, cudaMemcpyHostToDevice, up));
    CB_CHECK(cudaMemcpyAsync(pinned_out, out, host_bytes, cudaMemcpyDeviceToHost, down));
    CB_CHECK(cudaStreamSynchronize(up));
    CB_CHECK(cudaStreamSynchronize(down));
  });
  std::printf("both_pinned_gbps %.1f\n", 2.0 * gbps(both_ms));
  CB_CHECK(cudaStreamDestroy(up));
  CB_CHECK(cudaStreamDestroy(down));
  CB_CHECK(cudaFreeHost(pinned_in));
  CB_CHECK(cudaFreeHost(pinned_out));
  CB_CHECK(cudaFree(in));
  CB_CHECK(cudaFree(out));
  return 0;
}
