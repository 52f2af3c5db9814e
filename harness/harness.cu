// cudabugs harness main: loads grader-written inputs, calls the exercise, writes outputs.
//
//   harness [--poison] [--pinned] [--repeat N] [--vary FILE] [--call-times FILE [--gate]]
//           [--timeline FILE] [--spin] IN OUT [IN OUT ...]
//
// --poison fills output buffers with 0xFF bytes (NaN for floats) before each call, so elements the
// exercise never writes are caught. Sanitizer runs leave it off: initcheck must see unwritten memory.
// --pinned allocates the buffers cb_run receives with cudaMallocHost (`host_memory = "pinned"`).
// --repeat N calls cb_run N times per case (the timed runs); the outputs saved are the last call's.
// --vary FILE changes the inputs before each call after the first (the grader's timed runs): every
// input buffer is scaled towards its distribution's low end by that call's factor, so a program that
// remembers an earlier call's answer writes a wrong one. The file holds one line per input buffer,
// `NAME LO FACTOR1 FACTOR2 ...` (a factor per call after the first).
// --call-times FILE writes, per call, `WALL_NS CPU_NS`: the nanoseconds of the whole cb_run call
// from an idle GPU to the end of its GPU work (host work, copies, every kernel), and the CPU time all
// of the process's threads used meanwhile; then the largest device memory in use seen during the
// calls (`gpu-memory BYTES`). Waits for the GPU block instead of spinning, so that CPU time is work;
// --spin makes them spin: a blocked thread's wake-up costs 20-60 us on an H100, noise that swamps
// calls of a tenth of a millisecond (the `clock = "call"` exercises, whose calls are the clock).
// --gate (with --call-times): once the context exists and the inputs are loaded, create FILE.ready
// and wait for one byte on stdin before the first call; create FILE.done after the last: one process
// at a time has its turn while others start up. For scripts/gpu-calls-experiment.py; grade does not
// use it (on an H100 the calls of a process in its turn were 20-58% slower than alone).
// --timeline FILE writes every call's copies, launches, syncs and allocations (timeline.cuh), each
// call timed as with --call-times; a timing build only (it links the wrappers).
// Exit status: 0 ok, 2 bad usage or file, 3 a CUDA error (CB_CHECK).
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <type_traits>
#include <ctime>
#include <unistd.h>
#include "cudabugs.cuh"
#include "timeline.cuh"

namespace {

bool pinned_host_memory = false;

[[noreturn]] void die(const char* what, const char* detail) {
  std::fprintf(stderr, "harness: %s: %s\n", what, detail);
  std::exit(2);
}

struct Reader {
  FILE* f;
  const char* path;
  void raw(void* dst, size_t n) {
    if (n && std::fread(dst, 1, n, f) != n) die("truncated input file", path);
  }
  template <class T> T get() { T v; raw(&v, sizeof v); return v; }
  std::string name() {
    uint16_t len = get<uint16_t>();
    std::string s(len, '\0');
    raw(s.data(), len);
    return s;
  }
};

size_t dtype_size(cb::DType d) { return d == cb::DType::F64 ? 8 : 4; }

cb::Buffer buffer_header(Reader& r) {
  cb::Buffer b;
  b.name = r.name();
  b.dtype = static_cast<cb::DType>(r.get<uint8_t>());
  b.len = r.get<uint64_t>();
  b.bytes.resize(b.len * dtype_size(b.dtype));
  return b;
}

void load(const char* path, cb::Io& io) {
  FILE* f = std::fopen(path, "rb");
  if (!f) die("cannot open input", path);
  Reader r{f, path};
  char magic[4];
  r.raw(magic, 4);
  if (std::memcmp(magic, "CBIN", 4) != 0 || r.get<uint32_t>() != 1) die("not a cudabugs input file", path);
  for (uint32_t i = 0, n = r.get<uint32_t>(); i < n; i++) {
    std::string name = r.name();
    io.params_.emplace_back(name, r.get<int64_t>());
  }
  // An input buffer is its header followed by its bytes; an output buffer is a header only.
  for (uint32_t i = 0, n = r.get<uint32_t>(); i < n; i++) {
    cb::Buffer b = buffer_header(r);
    r.raw(b.bytes.data(), b.bytes.size());
    io.inputs_.push_back(std::move(b));
  }
  for (uint32_t i = 0, n = r.get<uint32_t>(); i < n; i++) io.outputs_.push_back(buffer_header(r));
  std::fclose(f);
}

void save(const char* path, const cb::Io& io) {
  FILE* f = std::fopen(path, "wb");
  if (!f) die("cannot write output", path);
  auto put = [&](const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f) != n) die("write failed", path);
  };
  const uint32_t version = 1, count = static_cast<uint32_t>(io.outputs_.size());
  put("CBOT", 4);
  put(&version, 4);
  put(&count, 4);
  for (const cb::Buffer& b : io.outputs_) {
    const uint16_t len = static_cast<uint16_t>(b.name.size());
    const uint64_t elems = b.len;
    put(&len, 2);
    put(b.name.data(), len);
    put(&b.dtype, 1);
    put(&elems, 8);
    put(b.bytes.data(), b.bytes.size());
  }
  if (std::fclose(f) != 0) die("write failed", path);
}

// One input buffer's variation: its values move towards `lo` by each call's factor.
struct Variation {
  std::string name;
  double lo;
  std::vector<double> factors;
};

std::vector<Variation> load_variations(const char* path) {
  FILE* f = std::fopen(path, "r");
  if (!f) die("cannot open the variation file", path);
  std::vector<Variation> out;
  char line[4096];
  while (std::fgets(line, sizeof line, f)) {
    char name[256];
    int used = 0;
    Variation v;
    if (std::sscanf(line, "%255s %lf%n", name, &v.lo, &used) != 2) continue;
    v.name = name;
    double factor;
    int more = 0;
    for (const char* p = line + used; std::sscanf(p, "%lf%n", &factor, &more) == 1; p += more) v.factors.push_back(factor);
    out.push_back(std::move(v));
  }
  std::fclose(f);
  return out;
}

// Call `call` (1, 2, ...) sees `original` scaled towards lo: lo + (x - lo) * factor, which stays
// inside the manifest's range for floats and integers alike.
template <class T> void vary(const cb::Bytes& original, cb::Bytes& now, double lo, double factor) {
  const T* src = reinterpret_cast<const T*>(original.data());
  T* dst = reinterpret_cast<T*>(now.data());
  const size_t n = original.size() / sizeof(T);
  for (size_t i = 0; i < n; i++) {
    const double x = static_cast<double>(src[i]);
    double y = lo + (x - lo) * factor;
    if (std::is_integral<T>::value) y = std::floor(y);
    dst[i] = static_cast<T>(y);
  }
}

void apply_variation(cb::Io& io, const std::vector<cb::Buffer>& originals, const std::vector<Variation>& vars, int call) {
  for (size_t b = 0; b < io.inputs_.size(); b++) {
    cb::Buffer& buf = io.inputs_[b];
    for (const Variation& v : vars) {
      if (v.name != buf.name || call < 1 || static_cast<size_t>(call) > v.factors.size()) continue;
      const double f = v.factors[call - 1];
      switch (buf.dtype) {
        case cb::DType::F32: vary<float>(originals[b].bytes, buf.bytes, v.lo, f); break;
        case cb::DType::F64: vary<double>(originals[b].bytes, buf.bytes, v.lo, f); break;
        case cb::DType::I32: vary<int>(originals[b].bytes, buf.bytes, v.lo, f); break;
        case cb::DType::U32: vary<unsigned>(originals[b].bytes, buf.bytes, v.lo, f); break;
      }
    }
  }
}

// The device memory in use (all of this GPU's, as the driver counts it), sampled every 2 ms while
// the timed calls run: the timed calls run alone on the GPU, so it is this program's.
struct MemoryWatch {
  std::atomic<bool> stop{false};
  std::atomic<size_t> peak{0};
  std::thread thread;
  void sample() {
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
      const size_t used = total_b - free_b;
      size_t seen = peak.load();
      while (used > seen && !peak.compare_exchange_weak(seen, used)) {}
    }
  }
  void start() {
    sample();
    thread = std::thread([this] {
      while (!stop.load()) {
        sample();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  }
  // Forget what was seen before the calls (another process's start-up, while this one waited).
  void restart() {
    peak = 0;
    sample();
  }
  void finish() {
    stop = true;
    if (thread.joinable()) thread.join();
    sample();
  }
};

long long cpu_ns() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

void touch(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f || std::fclose(f) != 0) die("cannot write the gate file", path.c_str());
}

}  // namespace

void* cb::host_alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  if (pinned_host_memory) {
    CB_CHECK(cudaMallocHost(&p, bytes));
  } else if (!(p = std::malloc(bytes))) {
    die("out of host memory", "a buffer");
  }
  return p;
}

void cb::host_free(void* p) {
  if (!p) return;
  // After cudaDeviceReset the pinned memory is gone with the context: the error is expected.
  if (pinned_host_memory) (void)cudaFreeHost(p), (void)cudaGetLastError();
  else std::free(p);
}

long long cb::Io::param(const char* name) const {
  for (const auto& p : params_)
    if (p.first == name) return p.second;
  die("the exercise asked for an unknown parameter", name);
}

const cb::Buffer& cb::Io::find(const std::vector<Buffer>& list, const char* name, DType want,
                               const char* what) const {
  for (const Buffer& b : list) {
    if (b.name != name) continue;
    if (b.dtype != want) die("the exercise asked for a buffer with the wrong element type", name);
    return b;
  }
  die(what, name);
}

int main(int argc, char** argv) {
  bool poison = false;
  int repeat = 1, i = 1;
  const char* vary_path = nullptr;
  const char* times_path = nullptr;
  const char* timeline_path = nullptr;
  bool gate = false, spin = false;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!std::strcmp(argv[i], "--poison")) poison = true;
    else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--vary") && i + 1 < argc) vary_path = argv[++i];
    else if (!std::strcmp(argv[i], "--call-times") && i + 1 < argc) times_path = argv[++i];
    else if (!std::strcmp(argv[i], "--gate")) gate = true;
    else if (!std::strcmp(argv[i], "--pinned")) pinned_host_memory = true;
    else if (!std::strcmp(argv[i], "--spin")) spin = true;
    else if (!std::strcmp(argv[i], "--timeline") && i + 1 < argc) timeline_path = argv[++i];
    else die("unknown option", argv[i]);
  }
  if (i == argc || (argc - i) % 2 != 0 || repeat < 1 || (gate && !times_path)) die("usage", "harness [--poison] [--pinned] [--repeat N] [--vary FILE] [--call-times FILE [--gate]] [--timeline FILE] [--spin] IN OUT [IN OUT ...]");
  const std::vector<Variation> variations = vary_path ? load_variations(vary_path) : std::vector<Variation>();
  std::vector<std::pair<long long, long long>> call_ns;
  MemoryWatch memory;
  // Calls are timed (and the GPU idle before each) for the call times and for the timeline.
  const bool timed = times_path || timeline_path;
  if (timed) {
    // Before the context exists where the runtime insists (code that ran before main may have made
    // one: then the waits spin and count as CPU time, the program's own doing).
    if (cudaSetDeviceFlags(spin ? cudaDeviceScheduleSpin : cudaDeviceScheduleBlockingSync) != cudaSuccess) (void)cudaGetLastError();
    if (times_path) memory.start();
  }
  for (bool first = true; i + 1 < argc; i += 2, first = false) {
    cb::Io io;
    load(argv[i], io);
    const std::vector<cb::Buffer> originals = variations.empty() ? std::vector<cb::Buffer>() : io.inputs_;
    if (gate && first) {
      touch(std::string(times_path) + ".ready");
      char go = 0;
      if (read(0, &go, 1) != 1) die("the grader closed the gate", times_path);
      memory.restart();
    }
    for (int r = 0; r < repeat; r++) {
      if (!variations.empty()) apply_variation(io, originals, variations, r);
      for (cb::Buffer& b : io.outputs_) std::memset(b.bytes.data(), poison ? 0xFF : 0, b.bytes.size());
      if (timed) CB_CHECK(cudaDeviceSynchronize());
      if (timeline_path) cb_timeline::begin();
      const auto start = std::chrono::steady_clock::now();
      const long long cpu_start = cpu_ns();
      cb_run(io);
      if (timeline_path) cb_timeline::stop();
      if (timed) {
        CB_CHECK(cudaDeviceSynchronize());
        const long long wall = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
        call_ns.emplace_back(wall, cpu_ns() - cpu_start);
        if (timeline_path) cb_timeline::end(static_cast<int>(call_ns.size()) - 1, wall);
      }
    }
    CB_CHECK(cudaDeviceSynchronize());
    CB_CHECK(cudaGetLastError());
    if (gate && first) touch(std::string(times_path) + ".done");
    save(argv[i + 1], io);
  }
  if (times_path) {
    memory.finish();
    FILE* f = std::fopen(times_path, "w");
    if (!f) die("cannot write the call times", times_path);
    for (const auto& c : call_ns) std::fprintf(f, "%lld %lld\n", c.first, c.second);
    std::fprintf(f, "gpu-memory %zu\n", memory.peak.load());
    if (std::fclose(f) != 0) die("write failed", times_path);
  }
  if (timeline_path) cb_timeline::write(timeline_path);
  // Destroying the context is what lets memcheck's leak check see allocations never freed.
  CB_CHECK(cudaDeviceReset());
  return 0;
}
