// The driver's account of the served calls (`--driver FROM LIB FILE`): CUPTI's activity records of
// every kernel, copy, memset and synchronisation the GPU ran for call FROM and every later call,
// whoever launched them (chevrons, cudaLaunchKernelEx, the driver API, the nodes of a graph), with
// the GPU's own start and end. The timeline's wrappers (timeline.cuh) see only the runtime calls
// they wrap; this is what the launch and copy metrics are counted from, and, where the kernels are
// the clock, each judged call's kernel time outside ncu (the grader compares it with ncu's:
// grader/src/judge/speed, rule `faster-under-ncu`).
//
// CUPTI is opened at run time (LIB, the toolkit's libcupti, found by the grader) so that the same
// harness object links into every build; a harness compiled without CUPTI's headers writes
// `unavailable` and the grader falls back to the wrappers. CUPTI refuses to subscribe under
// compute-sanitizer and is not asked for under ncu: only the plain call timing passes --driver.
//
// Records are buffered by CUPTI and read once, at the end: nothing is done between calls but two
// timestamps (cuptiGetTimestamp, the records' own time base), so the calls the grader clocks cost
// what they cost without it, but for CUPTI's own work at each launch.
//
// File format:
//   driver ok | driver unavailable WHY...
//   call INDEX
//   gpu KIND STREAM START_NS END_NS BYTES CORRELATION NAME...
//   sync STREAM START_NS END_NS
//   dropped N
// KIND: kernel h2d d2h d2d h2h memset; STREAM: CUPTI's stream id; times from the call's start
// (the harness's, just before the exercise's entry point); CORRELATION: the runtime or driver call
// that queued it (the nodes of one graph launch share their launch's); NAME: the kernel's function
// name, demangled, without its parameters ("-" for copies). A sync is a wait the call made (the
// harness's own wait after the call is not in it).
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <vector>
#include "timeline.cuh"
#ifdef CUDABUGS_CUPTI
#include <cupti.h>
#endif

namespace cb_driver {

struct Record {
  const char* kind;
  uint32_t stream;
  uint64_t start, end, bytes;
  uint32_t correlation;
  std::string name;
};

struct Window {
  uint64_t call;
  uint64_t start, returned, end;  // the call's start, when cb_run returned, after the harness's wait
};

struct State {
  bool opened = false, on = false;
  std::string why = "no call was recorded";
  std::mutex lock;  // CUPTI completes buffers on its own thread
  std::vector<Record> records, syncs;
  std::vector<Window> windows;
  uint64_t dropped = 0;
#ifdef CUDABUGS_CUPTI
  CUptiResult (*enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*get_timestamp)(uint64_t*) = nullptr;
  CUptiResult (*flush_all)(uint32_t) = nullptr;
  CUptiResult (*next_record)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*dropped_records)(CUcontext, uint32_t, size_t*) = nullptr;
#endif
};

inline State& state() {
  static State s;
  return s;
}

// A record's kernel name (a kernel of an `extern "C"` or a mangled name alike); "?" for none.
inline std::string demangled(const char* raw) {
  const std::string name = cb_timeline::plain_name(raw);
  return name.empty() ? "?" : name;
}

#ifdef CUDABUGS_CUPTI
constexpr size_t kBuffer = 8u << 20;

inline void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBuffer));
  *size = *buffer ? kBuffer : 0;
  *records = 0;
}

inline const char* copy_kind(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "h2d";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "d2h";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "h2h";
    default: return "d2d";
  }
}

inline void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  State& st = state();
  CUpti_Activity* r = nullptr;
  std::lock_guard<std::mutex> guard(st.lock);
  while (buffer && st.next_record(buffer, valid, &r) == CUPTI_SUCCESS) {
    switch (r->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(r);
        st.records.push_back({"kernel", k->streamId, k->start, k->end, 0, k->correlationId, demangled(k->name)});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(r);
        st.records.push_back({copy_kind(m->copyKind), m->streamId, m->start, m->end, m->bytes, m->correlationId, "-"});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(r);
        st.records.push_back({"memset", m->streamId, m->start, m->end, m->bytes, m->correlationId, "-"});
        break;
      }
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        auto* s = reinterpret_cast<CUpti_ActivitySynchronization2*>(r);
        st.syncs.push_back({"sync", s->streamId, s->start, s->end, 0, s->correlationId, "-"});
        break;
      }
      default: break;
    }
  }
  std::free(buffer);
}
#endif

// Open CUPTI from `lib` and hand it the buffers. Where any of it fails the file says why and
// nothing is recorded.
inline void open(const char* lib) {
  State& st = state();
#ifndef CUDABUGS_CUPTI
  (void)lib;
  st.why = "the harness was built without CUPTI's headers";
#else
  void* handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    st.why = std::string("cannot open ") + lib;
    return;
  }
  auto find = [&](const char* name) { return dlsym(handle, name); };
  using Register = CUptiResult (*)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
  auto reg = reinterpret_cast<Register>(find("cuptiActivityRegisterCallbacks"));
  st.enable = reinterpret_cast<decltype(st.enable)>(find("cuptiActivityEnable"));
  st.get_timestamp = reinterpret_cast<decltype(st.get_timestamp)>(find("cuptiGetTimestamp"));
  st.flush_all = reinterpret_cast<decltype(st.flush_all)>(find("cuptiActivityFlushAll"));
  st.next_record = reinterpret_cast<decltype(st.next_record)>(find("cuptiActivityGetNextRecord"));
  st.dropped_records = reinterpret_cast<decltype(st.dropped_records)>(find("cuptiActivityGetNumDroppedRecords"));
  if (!reg || !st.enable || !st.get_timestamp || !st.flush_all || !st.next_record) {
    st.why = std::string("CUPTI's activity functions are missing from ") + lib;
    return;
  }
  const CUptiResult r = reg(requested, completed);
  if (r != CUPTI_SUCCESS) {
    st.why = "CUPTI refused its buffers (CUptiResult " + std::to_string(static_cast<int>(r)) + ")";
    return;
  }
  st.opened = true;
#endif
}

// Subscribe to kernels, copies, memsets and waits, ahead of the first call recorded (where the
// call is the clock, only the call after the judged ones is, and CUPTI's work at each launch, 5-7 us
// on an H200, stays out of the judged calls. Disabling the activity kinds after a traced call does
// not take it all out again: 62's original, 96 launches a call, was judged at 700.8 us a call after
// such a call against 490.7 us with the traced call last, about 2 us a launch, on an H200;
// book/gpu-runs/2026-11-29-traced-47/). The harness does it between calls,
// after the grader has its outputs, and then runs a kernel of its own (harness.cu): the first
// launches after CUPTI subscribes cost milliseconds once (3.7 ms measured on an H200), which would
// otherwise fall in the recorded call.
inline void subscribe() {
  State& st = state();
  if (st.on || !st.opened) return;
#ifdef CUDABUGS_CUPTI
  CUptiResult r = CUPTI_SUCCESS;
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                  CUPTI_ACTIVITY_KIND_SYNCHRONIZATION})
    if (r == CUPTI_SUCCESS) r = st.enable(kind);
  if (r != CUPTI_SUCCESS) {
    st.why = "CUPTI refused to subscribe (CUptiResult " + std::to_string(static_cast<int>(r)) + ")";
    st.opened = false;
    return;
  }
  st.on = true;
  st.why.clear();
#endif
}

inline uint64_t now() {
#ifdef CUDABUGS_CUPTI
  uint64_t t = 0;
  if (state().on && state().get_timestamp(&t) == CUPTI_SUCCESS) return t;
#endif
  return 0;
}

// The call's three instants (see Window), each one CUPTI timestamp.
inline void call_started(uint64_t call) {
  if (state().on) state().windows.push_back({call, now(), 0, 0});
}
inline void call_returned() {
  if (state().on && !state().windows.empty()) state().windows.back().returned = now();
}
inline void call_ended() {
  if (state().on && !state().windows.empty()) state().windows.back().end = now();
}

// After the last call: every buffer read, each call's records written to `path` from its start.
inline void write(const char* path) {
  State& st = state();
  std::string text = st.on ? "driver ok\n" : "driver unavailable " + st.why + "\n";
#ifdef CUDABUGS_CUPTI
  if (st.on) {
    (void)st.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    size_t lost = 0;
    if (st.dropped_records && st.dropped_records(nullptr, 0, &lost) == CUPTI_SUCCESS) st.dropped += lost;
  }
#endif
  std::lock_guard<std::mutex> guard(st.lock);
  char line[256];
  auto in = [](const Record& r, uint64_t from, uint64_t to) { return r.start >= from && r.start <= to; };
  for (const Window& w : st.windows) {
    std::snprintf(line, sizeof line, "call %llu\n", static_cast<unsigned long long>(w.call));
    text += line;
    for (const Record& r : st.records) {
      if (!in(r, w.start, w.end)) continue;
      std::snprintf(line, sizeof line, "gpu %s %u %lld %lld %llu %u ", r.kind, r.stream, static_cast<long long>(r.start - w.start),
                    static_cast<long long>(r.end - w.start), static_cast<unsigned long long>(r.bytes), r.correlation);
      text += line;
      text += r.name;
      text += "\n";
    }
    for (const Record& s : st.syncs) {
      if (!in(s, w.start, w.returned)) continue;
      std::snprintf(line, sizeof line, "sync %u %lld %lld\n", s.stream, static_cast<long long>(s.start - w.start),
                    static_cast<long long>(s.end - w.start));
      text += line;
    }
  }
  if (st.dropped) {
    std::snprintf(line, sizeof line, "dropped %llu\n", static_cast<unsigned long long>(st.dropped));
    text += line;
  }
  FILE* f = std::fopen(path, "w");
  if (!f || std::fputs(text.c_str(), f) < 0 || std::fclose(f) != 0) {
    std::fprintf(stderr, "harness: cannot write the driver's records %s\n", path);
    std::exit(2);
  }
}

}  // namespace cb_driver
