// The harness's timeline of a call (`--timeline FILE`): every copy, memset, launch, sync and
// allocation the exercise makes, with when the host made the call and, for work that runs on the
// GPU, when its stream reached it and finished it (CUDA events recorded around it in its stream).
// This is what draws the lessons' timelines (the host's side of each call); the launch and copy
// metrics of the `clock = "call"` exercises are counted from CUPTI's records of the same call
// (driver.cuh), which see what these wrappers do not (the driver API, graph nodes), and from these
// only where the toolkit has no CUPTI. The wrappers also count every launch in every call, recorded
// or not (an atomic add each): a program that launched fewer kernels in the recorded call than in
// the judged ones behaved otherwise when watched (rule `recorded-call`).
//
// How it sees the exercise's calls: the timing build links with `-Xlinker --wrap=SYMBOL` for each
// SYMBOL wrapped here (grader/src/tools/nvcc.rs, TIMELINE_WRAPPED), so the exercise's references
// reach `__wrap_SYMBOL`, which records and forwards to `__real_SYMBOL`. The `__real_` references
// are weak: the sanitizer builds are not wrapped, and nothing calls them there.
//
// The events are recorded beside the work, so an operation's GPU start is when its stream reached
// it: a copy queued behind a busy copy engine shows from when it was queued. The call that is
// recorded is not one that is judged (`--timeline CALL FILE`: the grader serves one call more after
// a number of judged calls drawn from its secret): two event records per operation cost the host
// ~2 us.
//
// File format, one call after another:
//   call INDEX WALL_NS
//   launched INDEX LAUNCHES   (every call, recorded or not: the launches the wrappers saw)
//   op KIND STREAM HOST_START_NS HOST_END_NS GPU_START_NS GPU_END_NS BYTES NAME
// KIND: kernel graph h2d d2h d2d h2h memset sync alloc free; STREAM: 0 the default stream, then
// 1, 2, ... in the order the call used them; times from the start of the call (the host's clock
// for HOST_, the GPU's for GPU_, both zero at the call's start), -1 where there is none.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cxxabi.h>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>
#include <cuda_runtime.h>

namespace cb_timeline {

struct Op {
  const char* kind;
  int stream;
  long long host_start, host_end;
  int ev_start = -1, ev_end = -1;  // indices into the event pool; -1: no GPU interval
  size_t bytes;
  std::string name;
};

struct State {
  std::atomic<bool> on{false};  // read by every wrapped call, from any of the exercise's threads
  std::mutex lock;
  std::vector<cudaEvent_t> pool;
  size_t used = 0;
  cudaEvent_t base = nullptr;
  std::chrono::steady_clock::time_point host_base;
  std::vector<Op> ops;
  std::vector<cudaStream_t> streams;  // index + 1 is a stream's number; 0 is the default stream
  std::unordered_map<const void*, const void*> kernel_functions;  // cudaKernel_t -> host stub
  std::unordered_map<const void*, std::string> kernel_names;      // host stub -> name, made once
  std::string text;
  size_t dropped = 0;
  std::atomic<uint64_t> launches{0};  // kernel and graph launches since the last take_launches
};

inline State& state() {
  static State s;
  return s;
}

inline long long host_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - state().host_base).count();
}

inline int stream_number(cudaStream_t s) {
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return 0;
  State& st = state();
  for (size_t i = 0; i < st.streams.size(); i++)
    if (st.streams[i] == s) return static_cast<int>(i) + 1;
  st.streams.push_back(s);
  return static_cast<int>(st.streams.size());
}

// The launches the wrappers saw since the last call of this (the harness's, around each call).
inline uint64_t take_launches() { return state().launches.exchange(0, std::memory_order_relaxed); }

// Call `call`'s count of launches, for the file.
inline void launched(int call, uint64_t n) {
  char line[64];
  std::snprintf(line, sizeof line, "launched %d %llu\n", call, static_cast<unsigned long long>(n));
  state().text += line;
}

inline void count_launch() { state().launches.fetch_add(1, std::memory_order_relaxed); }

// An event of the pool recorded in `s` now; -1 where the pool is spent.
inline int mark(cudaStream_t s) {
  State& st = state();
  if (st.used >= st.pool.size()) {
    st.dropped++;
    return -1;
  }
  const int i = static_cast<int>(st.used++);
  if (cudaEventRecord(st.pool[i], s) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return i;
}

// The kernel's name as the source writes it: demangled, without its parameter list.
// A kernel's compiled (mangled) name as the source writes it: demangled, without its parameter
// list; "" for none. The driver's records (driver.cuh) name kernels with it too.
inline std::string plain_name(const char* raw) {
  if (raw == nullptr) return "";
  int status = 0;
  char* plain = abi::__cxa_demangle(raw, nullptr, nullptr, &status);
  std::string name = status == 0 && plain ? plain : raw;
  std::free(plain);
  const size_t paren = name.find('(');
  if (paren != std::string::npos) name.resize(paren);
  return name;
}

inline std::string demangled_name(const void* function) {
  const char* raw = nullptr;
  if (function == nullptr || cudaFuncGetName(&raw, function) != cudaSuccess || raw == nullptr) {
    (void)cudaGetLastError();
    return "?";
  }
  std::string name = plain_name(raw);
  for (char& c : name)
    if (c == ' ') c = '_';
  return name.empty() ? "?" : name;
}

// A kernel's name, by its host stub, worked out at its first recorded launch only (a launch costs
// the host microseconds; demangling every one would add to what the timeline shows).
inline std::string kernel_name(const void* function) {
  State& st = state();
  std::lock_guard<std::mutex> guard(st.lock);
  auto known = st.kernel_names.find(function);
  if (known == st.kernel_names.end()) known = st.kernel_names.emplace(function, demangled_name(function)).first;
  return known->second;
}

// Work queued while its stream is captured into a graph does not run: it is not recorded (the
// graph's launch is).
inline bool capturing(cudaStream_t s) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(s, &status) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return status != cudaStreamCaptureStatusNone;
}

// Work that runs in a stream: the host's call and the GPU's interval around it.
template <class F> cudaError_t gpu_op(const char* kind, cudaStream_t s, size_t bytes, std::string name, F call) {
  State& st = state();
  if (!st.on || capturing(s)) return call();
  std::lock_guard<std::mutex> guard(st.lock);
  Op op{kind, stream_number(s), host_ns(), 0, -1, -1, bytes, std::move(name)};
  op.ev_start = mark(s);
  const cudaError_t result = call();
  op.ev_end = op.ev_start >= 0 ? mark(s) : -1;
  op.host_end = host_ns();
  st.ops.push_back(std::move(op));
  return result;
}

// A call that only the host sees: a sync's wait, an allocation.
template <class F> cudaError_t host_op(const char* kind, cudaStream_t s, F call) {
  State& st = state();
  if (!st.on) return call();
  std::lock_guard<std::mutex> guard(st.lock);
  Op op{kind, stream_number(s), host_ns(), 0, -1, -1, 0, "-"};
  const cudaError_t result = call();
  op.host_end = host_ns();
  st.ops.push_back(std::move(op));
  return result;
}

inline bool on_device(const void* p) {
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

inline const char* copy_kind(void* dst, const void* src, cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToDevice: return "h2d";
    case cudaMemcpyDeviceToHost: return "d2h";
    case cudaMemcpyDeviceToDevice: return "d2d";
    case cudaMemcpyHostToHost: return "h2h";
    default: {
      const bool d = on_device(dst), s = on_device(src);
      return s ? (d ? "d2d" : "d2h") : (d ? "h2d" : "h2h");
    }
  }
}

// Before a call: the GPU is idle (the harness synchronised); time zero on both clocks.
inline void begin() {
  State& st = state();
  if (st.pool.empty()) {
    st.pool.resize(8192);
    for (cudaEvent_t& e : st.pool)
      if (cudaEventCreate(&e) != cudaSuccess) {
        std::fprintf(stderr, "harness: cannot create the timeline's events\n");
        std::exit(3);
      }
    if (cudaEventCreate(&st.base) != cudaSuccess) std::exit(3);
  }
  st.used = 0;
  st.ops.clear();
  st.streams.clear();
  st.host_base = std::chrono::steady_clock::now();
  if (cudaEventRecord(st.base, cudaStreamLegacy) != cudaSuccess) std::exit(3);
  st.on = true;
}

// When the exercise's call returns: the harness's own sync after it is not the exercise's.
inline void stop() { state().on = false; }

// After the harness's sync: every event has completed; write the call's operations.
inline void end(int call, long long wall_ns) {
  State& st = state();
  auto gpu = [&](int ev) -> long long {
    float ms = 0;
    if (ev < 0 || cudaEventElapsedTime(&ms, st.base, st.pool[ev]) != cudaSuccess) {
      (void)cudaGetLastError();
      return -1;
    }
    return static_cast<long long>(ms * 1e6);
  };
  char line[512];
  std::snprintf(line, sizeof line, "call %d %lld\n", call, wall_ns);
  st.text += line;
  for (const Op& op : st.ops) {
    const long long g0 = gpu(op.ev_start), g1 = gpu(op.ev_end);
    std::snprintf(line, sizeof line, "op %s %d %lld %lld %lld %lld %zu %s\n", op.kind, op.stream, op.host_start, op.host_end, g0 < 0 || g1 < 0 ? -1 : g0,
                  g0 < 0 || g1 < 0 ? -1 : g1, op.bytes, op.name.c_str());
    st.text += line;
  }
  if (st.dropped) {
    std::snprintf(line, sizeof line, "dropped %zu\n", st.dropped);
    st.text += line;
    st.dropped = 0;
  }
}

inline void write(const char* path) {
  FILE* f = std::fopen(path, "w");
  if (!f || std::fputs(state().text.c_str(), f) < 0 || std::fclose(f) != 0) {
    std::fprintf(stderr, "harness: cannot write the timeline %s\n", path);
    std::exit(2);
  }
}

// A kernel launch by its host stub (`function`), through `real`: counted, and recorded where on.
template <class F> cudaError_t launch(const void* function, cudaStream_t stream, F real) {
  const std::string name = state().on ? kernel_name(function) : "?";
  count_launch();
  return gpu_op("kernel", stream, 0, name, real);
}

// A graph's launch, through `real`: one launch, as on the host.
template <class F> cudaError_t graph_launch(cudaStream_t stream, F real) {
  count_launch();
  return gpu_op("graph", stream, 0, "graph", real);
}

}  // namespace cb_timeline

// The wrapped calls. Weak: only the timing build's --wrap makes them resolve.
extern "C" {
cudaError_t __real___cudaLaunchKernel(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t) __attribute__((weak));
cudaError_t __real___cudaGetKernel(cudaKernel_t*, const void*) __attribute__((weak));
cudaError_t __real_cudaLaunchKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t) __attribute__((weak));
cudaError_t __real_cudaLaunchCooperativeKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t) __attribute__((weak));
cudaError_t __real_cudaGraphLaunch(cudaGraphExec_t, cudaStream_t) __attribute__((weak));
// The per-thread default stream's entry points and the launch with attributes: any fix may call
// them by name (`cuda*`), so they are wrapped too, and counted.
cudaError_t __real_cudaLaunchKernel_ptsz(const void*, dim3, dim3, void**, size_t, cudaStream_t) __attribute__((weak));
cudaError_t __real_cudaLaunchCooperativeKernel_ptsz(const void*, dim3, dim3, void**, size_t, cudaStream_t) __attribute__((weak));
cudaError_t __real_cudaLaunchKernelExC(const cudaLaunchConfig_t*, const void*, void**) __attribute__((weak));
cudaError_t __real_cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t*, const void*, void**) __attribute__((weak));
cudaError_t __real_cudaGraphLaunch_ptsz(cudaGraphExec_t, cudaStream_t) __attribute__((weak));
cudaError_t __real_cudaMemcpy(void*, const void*, size_t, cudaMemcpyKind) __attribute__((weak));
cudaError_t __real_cudaMemcpyAsync(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t) __attribute__((weak));
cudaError_t __real_cudaMemset(void*, int, size_t) __attribute__((weak));
cudaError_t __real_cudaMemsetAsync(void*, int, size_t, cudaStream_t) __attribute__((weak));
cudaError_t __real_cudaDeviceSynchronize(void) __attribute__((weak));
cudaError_t __real_cudaStreamSynchronize(cudaStream_t) __attribute__((weak));
cudaError_t __real_cudaMalloc(void**, size_t) __attribute__((weak));
cudaError_t __real_cudaFree(void*) __attribute__((weak));

cudaError_t __wrap___cudaGetKernel(cudaKernel_t* kernel, const void* function) {
  const cudaError_t r = __real___cudaGetKernel(kernel, function);
  if (r == cudaSuccess && kernel) {
    cb_timeline::State& st = cb_timeline::state();
    std::lock_guard<std::mutex> guard(st.lock);
    st.kernel_functions[*kernel] = function;
  }
  return r;
}

cudaError_t __wrap___cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  cb_timeline::State& st = cb_timeline::state();
  const void* function = nullptr;
  if (st.on) {
    std::lock_guard<std::mutex> guard(st.lock);
    auto f = st.kernel_functions.find(kernel);
    if (f != st.kernel_functions.end()) function = f->second;
  }
  const std::string name = function ? cb_timeline::kernel_name(function) : "?";
  cb_timeline::count_launch();
  return cb_timeline::gpu_op("kernel", stream, 0, name, [&] { return __real___cudaLaunchKernel(kernel, grid, block, args, shared, stream); });
}

cudaError_t __wrap_cudaLaunchKernel(const void* function, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  return cb_timeline::launch(function, stream, [&] { return __real_cudaLaunchKernel(function, grid, block, args, shared, stream); });
}

cudaError_t __wrap_cudaLaunchKernel_ptsz(const void* function, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  return cb_timeline::launch(function, stream, [&] { return __real_cudaLaunchKernel_ptsz(function, grid, block, args, shared, stream); });
}

cudaError_t __wrap_cudaLaunchCooperativeKernel(const void* function, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  return cb_timeline::launch(function, stream, [&] { return __real_cudaLaunchCooperativeKernel(function, grid, block, args, shared, stream); });
}

cudaError_t __wrap_cudaLaunchCooperativeKernel_ptsz(const void* function, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream) {
  return cb_timeline::launch(function, stream, [&] { return __real_cudaLaunchCooperativeKernel_ptsz(function, grid, block, args, shared, stream); });
}

// cudaLaunchKernelEx (the C++ template) reaches the C function.
cudaError_t __wrap_cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* function, void** args) {
  return cb_timeline::launch(function, config ? config->stream : nullptr, [&] { return __real_cudaLaunchKernelExC(config, function, args); });
}

cudaError_t __wrap_cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* function, void** args) {
  return cb_timeline::launch(function, config ? config->stream : nullptr, [&] { return __real_cudaLaunchKernelExC_ptsz(config, function, args); });
}

cudaError_t __wrap_cudaGraphLaunch(cudaGraphExec_t graph, cudaStream_t stream) {
  return cb_timeline::graph_launch(stream, [&] { return __real_cudaGraphLaunch(graph, stream); });
}

cudaError_t __wrap_cudaGraphLaunch_ptsz(cudaGraphExec_t graph, cudaStream_t stream) {
  return cb_timeline::graph_launch(stream, [&] { return __real_cudaGraphLaunch_ptsz(graph, stream); });
}

cudaError_t __wrap_cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  const char* k = cb_timeline::state().on ? cb_timeline::copy_kind(dst, src, kind) : "h2d";
  return cb_timeline::gpu_op(k, nullptr, bytes, "-", [&] { return __real_cudaMemcpy(dst, src, bytes, kind); });
}

cudaError_t __wrap_cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  const char* k = cb_timeline::state().on ? cb_timeline::copy_kind(dst, src, kind) : "h2d";
  return cb_timeline::gpu_op(k, stream, bytes, "-", [&] { return __real_cudaMemcpyAsync(dst, src, bytes, kind, stream); });
}

cudaError_t __wrap_cudaMemset(void* p, int value, size_t bytes) {
  return cb_timeline::gpu_op("memset", nullptr, bytes, "-", [&] { return __real_cudaMemset(p, value, bytes); });
}

cudaError_t __wrap_cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  return cb_timeline::gpu_op("memset", stream, bytes, "-", [&] { return __real_cudaMemsetAsync(p, value, bytes, stream); });
}

cudaError_t __wrap_cudaDeviceSynchronize(void) {
  return cb_timeline::host_op("sync", nullptr, [&] { return __real_cudaDeviceSynchronize(); });
}

cudaError_t __wrap_cudaStreamSynchronize(cudaStream_t stream) {
  return cb_timeline::host_op("sync", stream, [&] { return __real_cudaStreamSynchronize(stream); });
}

cudaError_t __wrap_cudaMalloc(void** p, size_t bytes) {
  return cb_timeline::host_op("alloc", nullptr, [&] { return __real_cudaMalloc(p, bytes); });
}

cudaError_t __wrap_cudaFree(void* p) {
  return cb_timeline::host_op("free", nullptr, [&] { return __real_cudaFree(p); });
}
}
