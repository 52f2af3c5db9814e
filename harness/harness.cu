// cudabugs harness main: runs the exercise's `cb_run` for the grader.
//
//   harness [--poison] [--pinned] IN OUT [IN OUT ...]
//   harness [--pinned] [--spin] [--timeline CALL FILE] [--driver CALL LIB FILE] --serve FD IN
//
// Cases (the first form): loads each grader-written input file, calls cb_run once, writes the
// outputs back. --poison fills the outputs with 0xFF bytes (NaN for floats) before the call, so
// elements the exercise never writes are caught; sanitizer runs leave it off: initcheck must see
// unwritten memory. --pinned allocates the buffers cb_run receives with cudaMallocHost
// (`host_memory = "pinned"`).
//
// Timed calls (`--serve FD`): nothing here is trusted. FD is memory the grader shares
// (grader/src/tools/served.rs, which writes the same layout): a control page, then each buffer of
// IN's layout (inputs, then outputs, each at a multiple of 4096 bytes). The grader writes every
// call's inputs and poisons its outputs, then starts the call by writing its number to `go`; the
// harness calls cb_run on the shared buffers, waits for the GPU and writes the number to `done`.
// The grader clocks the call from before it writes the inputs that only this call sees to after it
// holds the outputs, and checks every call's outputs, so neither this process's clocks nor which
// call it did can be forged from here. IN gives only the layout. --pinned registers the shared
// buffers (cudaHostRegister: copies as fast as from cudaMallocHost, measured on an H100). Waits
// spin (--spin: the `clock = "call"` exercises, where a blocked thread's wake-up of 20-60 us
// would swamp their calls) or block. Before the first call the context's persisting-L2 limit is
// set to 0 (what it was is reported): no earlier setting can shape these calls. --timeline CALL
// FILE writes the copies, launches, syncs and allocations (timeline.cuh) of call CALL at exit, and
// how many launches the wrappers saw in every call: the grader serves one call more than it clocks
// for the judge, after a number of judged calls the program cannot know, and only that one is
// recorded, so that one process gives both. A timing build only (it links the wrappers), and the
// program's own account, for the lessons' pictures. --driver CALL LIB FILE writes CUPTI's records
// (driver.cuh; LIB is libcupti) of call CALL (0: of every call) at exit: what the GPU ran, from
// which the launch and copy metrics are counted and each call's kernel time is taken.
//
// Exit status: 0 ok, 2 bad usage or file, 3 a CUDA error (CB_CHECK), 126 the grader asked for the
// no-spawn filter (below) and it could not be installed.
//
// No process of its own: where the grader's sandbox sets CUDABUGS_NO_SPAWN=1 (every graded run,
// under compute-sanitizer and ncu too, which pass their environment on), a seccomp filter is
// installed from this file's .preinit_array entry, which the dynamic loader runs before any
// constructor (the shared libraries', the tools' injected ones, the exercise's own): execve,
// execveat, fork, vfork and clone without CLONE_THREAD answer EPERM; clone3 answers ENOSYS (its
// flags live in memory a filter cannot read: glibc falls back to clone). Threads (CUDA's, the
// tools') are clones with CLONE_THREAD and keep working. The grader's own filter, installed before
// exec, cannot refuse exec: the tools must exec the program. This one is stacked on it, and a
// stacked filter can only take away. Nothing here goes through a function the program could define
// in its place (a definition in the executable wins over libc's): system calls are made by hand.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <type_traits>
#include <ctime>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <string>
#include <utility>
#include <vector>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include "cudabugs.cuh"
#include "timeline.cuh"
#include "driver.cuh"

namespace cb {

// Host memory for the buffers cb_run receives: pageable, or page-locked (cudaMallocHost) where the
// manifest says `host_memory = "pinned"` (the harness's --pinned).
void* host_alloc(size_t bytes);
void host_free(void* p);
template <class T> struct HostAllocator {
  using value_type = T;
  HostAllocator() = default;
  template <class U> HostAllocator(const HostAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(host_alloc(n * sizeof(T))); }
  void deallocate(T* p, size_t) { host_free(p); }
  template <class U> bool operator==(const HostAllocator<U>&) const { return true; }
  template <class U> bool operator!=(const HostAllocator<U>&) const { return false; }
};

using Bytes = std::vector<unsigned char, HostAllocator<unsigned char>>;

struct Buffer {
  std::string name;
  DType dtype;
  size_t len;
  // Where the exercise reads and writes it: the harness's own memory (`storage`, for the cases) or
  // the memory the grader shares for its timed calls (`--serve`).
  unsigned char* data = nullptr;
  Bytes storage;
  size_t size() const { return len * (dtype == DType::F64 ? 8 : 4); }
};

}  // namespace cb

struct cb::Io::Buffers {
  std::vector<std::pair<std::string, long long>> params;
  std::vector<Buffer> inputs, outputs;
};

cb::Io::Io() : buffers_(new Buffers) {}
cb::Io::~Io() { delete buffers_; }

// The harness's one kernel, launched (warm.cu): the rest of this file is host code, compiled as C++
// beside it (grader/src/tools/nvcc.rs, prepare_harness).
void cb_launch_driver_warm();

namespace no_spawn {

long raw(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0) {
#if defined(__x86_64__)
  long ret;
  register long r10 asm("r10") = d;
  register long r8 asm("r8") = e;
  asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
  return ret;
#elif defined(__aarch64__)
  register long x8 asm("x8") = nr;
  register long x0 asm("x0") = a;
  register long x1 asm("x1") = b;
  register long x2 asm("x2") = c;
  register long x3 asm("x3") = d;
  register long x4 asm("x4") = e;
  asm volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
  return x0;
#else
#error "the no-spawn filter knows x86-64 and aarch64"
#endif
}

#if defined(__x86_64__)
constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#else
constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#endif
constexpr unsigned kErrno = SECCOMP_RET_ERRNO;
#define CB_REFUSE(nr, err) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, kErrno | (err))

// Static, so that building it calls nothing (no memcpy of the program's).
const sock_filter kFilter[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
    // Another architecture's numbers (int 0x80 on x86-64) name other calls: none of them.
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, kErrno | ENOSYS),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
#if defined(__x86_64__)
    // x32 numbers (bit 30) name the same calls by other numbers.
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, kErrno | ENOSYS),
    CB_REFUSE(__NR_fork, EPERM),
    CB_REFUSE(__NR_vfork, EPERM),
#endif
    CB_REFUSE(__NR_execve, EPERM),
    CB_REFUSE(__NR_execveat, EPERM),
    CB_REFUSE(__NR_clone3, ENOSYS),
    // clone: a thread (CLONE_THREAD in the low word of the flags, the first argument) or nothing.
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, kErrno | EPERM),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};
#undef CB_REFUSE

bool asked(char** envp) {
  static const char kWant[] = "CUDABUGS_NO_SPAWN=1";
  for (char** e = envp; e && *e; e++) {
    size_t i = 0;
    while (kWant[i] && (*e)[i] == kWant[i]) i++;
    if (!kWant[i] && !(*e)[i]) return true;
  }
  return false;
}

[[noreturn]] void refuse(const char* why) {
  static const char kPrefix[] = "harness: the no-spawn filter could not be installed: ";
  raw(__NR_write, 2, reinterpret_cast<long>(kPrefix), sizeof kPrefix - 1);
  size_t n = 0;
  while (why[n]) n++;
  raw(__NR_write, 2, reinterpret_cast<long>(why), n);
  raw(__NR_write, 2, reinterpret_cast<long>("\n"), 1);
  for (;;) raw(__NR_exit_group, 126);
}

extern "C" void (*__preinit_array_start[])(int, char**, char**) __attribute__((visibility("hidden")));
extern "C" void (*__preinit_array_end[])(int, char**, char**) __attribute__((visibility("hidden")));

void install(int, char**, char** envp) {
  if (!asked(envp)) return;
  // Another entry before this one would have run first: only the harness's may be there.
  if (__preinit_array_end - __preinit_array_start != 1) refuse("the program has a .preinit_array entry of its own");
  if (raw(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) refuse("prctl(PR_SET_NO_NEW_PRIVS)");
  static const sock_fprog kProg = {static_cast<unsigned short>(sizeof kFilter / sizeof kFilter[0]),
                                   const_cast<sock_filter*>(kFilter)};
  if (raw(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, reinterpret_cast<long>(&kProg)) != 0)
    refuse("seccomp(SECCOMP_SET_MODE_FILTER)");
}

__attribute__((section(".preinit_array"), used)) void (*const kInstall)(int, char**, char**) = install;

}  // namespace no_spawn

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

cb::Buffer buffer_header(Reader& r) {
  cb::Buffer b;
  b.name = r.name();
  b.dtype = static_cast<cb::DType>(r.get<uint8_t>());
  b.len = r.get<uint64_t>();
  return b;
}

// The buffer in memory of its own (a case's).
void own(cb::Buffer& b) {
  b.storage.resize(b.size());
  b.data = b.storage.data();
}

// A case: parameters and inputs read in full, outputs allocated. `layout_only` (served calls):
// the inputs' bytes are skipped and nothing is allocated.
void load(const char* path, cb::Io& io, bool layout_only = false) {
  FILE* f = std::fopen(path, "rb");
  if (!f) die("cannot open input", path);
  Reader r{f, path};
  char magic[4];
  r.raw(magic, 4);
  if (std::memcmp(magic, "CBIN", 4) != 0 || r.get<uint32_t>() != 1) die("not a cudabugs input file", path);
  for (uint32_t i = 0, n = r.get<uint32_t>(); i < n; i++) {
    std::string name = r.name();
    io.buffers().params.emplace_back(name, r.get<int64_t>());
  }
  // An input buffer is its header followed by its bytes; an output buffer is a header only.
  for (uint32_t i = 0, n = r.get<uint32_t>(); i < n; i++) {
    cb::Buffer b = buffer_header(r);
    if (layout_only) {
      if (std::fseek(f, static_cast<long>(b.size()), SEEK_CUR) != 0) die("truncated input file", path);
    } else {
      own(b);
      r.raw(b.data, b.size());
    }
    io.buffers().inputs.push_back(std::move(b));
  }
  for (uint32_t i = 0, n = r.get<uint32_t>(); i < n; i++) {
    io.buffers().outputs.push_back(buffer_header(r));
    if (!layout_only) own(io.buffers().outputs.back());
  }
  std::fclose(f);
}

void save(const char* path, const cb::Io& io) {
  FILE* f = std::fopen(path, "wb");
  if (!f) die("cannot write output", path);
  auto put = [&](const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f) != n) die("write failed", path);
  };
  const uint32_t version = 1, count = static_cast<uint32_t>(io.buffers().outputs.size());
  put("CBOT", 4);
  put(&version, 4);
  put(&count, 4);
  for (const cb::Buffer& b : io.buffers().outputs) {
    const uint16_t len = static_cast<uint16_t>(b.name.size());
    const uint64_t elems = b.len;
    put(&len, 2);
    put(b.name.data(), len);
    put(&b.dtype, 1);
    put(&elems, 8);
    put(b.data, b.size());
  }
  if (std::fclose(f) != 0) die("write failed", path);
}

// The device memory in use (all of this GPU's, as the driver counts it), sampled every 2 ms while
// the timed calls run: the timed calls run alone on the GPU, so it is this program's. Reported by
// the program itself: it only ever asks a person to look (grade's gpu-memory rule takes no points).
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
  void finish() {
    stop = true;
    if (thread.joinable()) thread.join();
    sample();
  }
};

// The served calls' control page: the grader (grader/src/tools/served.rs) uses the same offsets.
constexpr size_t kPage = 4096;
constexpr uint64_t kMagic = 0x3145565245534243ull;  // "CBSERVE1"
constexpr size_t kMagicAt = 0, kGoAt = 64, kDoneAt = 128, kReadyAt = 192, kL2At = 256, kMemoryAt = 320;
constexpr uint64_t kQuit = ~0ull;

uint64_t* word(unsigned char* region, size_t at) { return reinterpret_cast<uint64_t*>(region + at); }
uint64_t load_word(unsigned char* region, size_t at) { return __atomic_load_n(word(region, at), __ATOMIC_ACQUIRE); }
void store_word(unsigned char* region, size_t at, uint64_t v) { __atomic_store_n(word(region, at), v, __ATOMIC_RELEASE); }

inline void relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

size_t round_up(size_t n) { return (n + kPage - 1) / kPage * kPage; }

// The harness's own work after CUPTI subscribes (see cb_driver::subscribe): outside every call.
void subscribe_driver() {
  cb_driver::subscribe();
  cb_launch_driver_warm();
  (void)cudaDeviceSynchronize();
  (void)cudaGetLastError();
}

// Where the served calls' records go: the timeline (the wrappers) of one call, and the driver's
// (CUPTI) of one call or of every call.
struct Records {
  const char* timeline = nullptr;
  uint64_t timeline_at = 1;
  const char* driver_lib = nullptr;
  const char* driver = nullptr;
  uint64_t driver_at = 0;  // 0: every call
  bool traces(uint64_t call) const { return driver && (driver_at == 0 || call == driver_at); }
};

// Serve the grader's timed calls on the memory it shares (see the top of this file).
int serve(int fd, const char* in_path, bool spin, const Records& records) {
  cb::Io io;
  load(in_path, io, true);
  size_t need = kPage;
  for (auto* list : {&io.buffers().inputs, &io.buffers().outputs})
    for (cb::Buffer& b : *list) need += round_up(b.size());
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < need) die("the shared memory is missing or too small for", in_path);
  auto* region = static_cast<unsigned char*>(mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (region == MAP_FAILED || load_word(region, kMagicAt) != kMagic) die("not the grader's shared memory", in_path);
  size_t at = kPage;
  for (auto* list : {&io.buffers().inputs, &io.buffers().outputs})
    for (cb::Buffer& b : *list) {
      b.data = region + at;
      at += round_up(b.size());
    }
  if (records.driver) cb_driver::open(records.driver_lib);
  if (cudaSetDeviceFlags(spin ? cudaDeviceScheduleSpin : cudaDeviceScheduleBlockingSync) != cudaSuccess) (void)cudaGetLastError();
  CB_CHECK(cudaFree(nullptr));
  if (pinned_host_memory) CB_CHECK(cudaHostRegister(region + kPage, st.st_size - kPage, cudaHostRegisterDefault));
  size_t l2 = 0;
  CB_CHECK(cudaDeviceGetLimit(&l2, cudaLimitPersistingL2CacheSize));
  store_word(region, kL2At, l2);
  CB_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
  (void)cudaCtxResetPersistingL2Cache();
  if (records.traces(1)) subscribe_driver();
  MemoryWatch memory;
  memory.start();
  store_word(region, kReadyAt, 1);
  for (uint64_t last = 0;;) {
    uint64_t call;
    while ((call = load_word(region, kGoAt)) == last) relax();
    if (call == kQuit) break;
    last = call;
    const bool recording = records.timeline && call == records.timeline_at;
    const bool traced = records.traces(call);
    if (recording) cb_timeline::begin();
    if (traced) cb_driver::call_started(call - 1);
    (void)cb_timeline::take_launches();
    const auto start = std::chrono::steady_clock::now();
    cb_run(io);
    if (traced) cb_driver::call_returned();
    if (recording) cb_timeline::stop();
    CB_CHECK(cudaDeviceSynchronize());
    CB_CHECK(cudaGetLastError());
    if (traced) cb_driver::call_ended();
    if (recording) cb_timeline::end(static_cast<int>(call) - 1, std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    if (records.timeline) cb_timeline::launched(static_cast<int>(call) - 1, cb_timeline::take_launches());
    store_word(region, kMemoryAt, memory.peak.load());
    store_word(region, kDoneAt, call);
    // The call before the traced one is done (and clocked): subscribe now, between calls.
    if (records.driver && call + 1 == records.driver_at) subscribe_driver();
  }
  memory.finish();
  if (records.timeline) cb_timeline::write(records.timeline);
  if (records.driver) cb_driver::write(records.driver);
  if (pinned_host_memory) (void)cudaHostUnregister(region + kPage);
  // Destroying the context is what lets memcheck's leak check see allocations never freed.
  CB_CHECK(cudaDeviceReset());
  return 0;
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
  for (const auto& p : buffers_->params)
    if (p.first == name) return p.second;
  die("the exercise asked for an unknown parameter", name);
}

void* cb::Io::find(const char* name, DType want, bool output, size_t* len) const {
  for (const Buffer& b : output ? buffers_->outputs : buffers_->inputs) {
    if (b.name != name) continue;
    if (b.dtype != want) die("the exercise asked for a buffer with the wrong element type", name);
    if (len) *len = b.len;
    return b.data;
  }
  die(output ? "output" : "input", name);
}

int main(int argc, char** argv) {
  bool poison = false, spin = false;
  int i = 1, fd = -1;
  Records records;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!std::strcmp(argv[i], "--poison")) poison = true;
    else if (!std::strcmp(argv[i], "--pinned")) pinned_host_memory = true;
    else if (!std::strcmp(argv[i], "--spin")) spin = true;
    else if (!std::strcmp(argv[i], "--timeline") && i + 2 < argc) {
      records.timeline_at = std::strtoull(argv[++i], nullptr, 10);
      records.timeline = argv[++i];
    }
    else if (!std::strcmp(argv[i], "--driver") && i + 3 < argc) {
      records.driver_at = std::strtoull(argv[++i], nullptr, 10);
      records.driver_lib = argv[++i];
      records.driver = argv[++i];
    }
    else if (!std::strcmp(argv[i], "--serve") && i + 1 < argc) fd = std::atoi(argv[++i]);
    else die("unknown option", argv[i]);
  }
  if (fd >= 0) {
    if (argc - i != 1) die("usage", "harness [--pinned] [--spin] [--timeline CALL FILE] [--driver CALL LIB FILE] --serve FD IN");
    return serve(fd, argv[i], spin, records);
  }
  if (i == argc || (argc - i) % 2 != 0 || records.timeline || records.driver) die("usage", "harness [--poison] [--pinned] IN OUT [IN OUT ...]");
  for (; i + 1 < argc; i += 2) {
    cb::Io io;
    load(argv[i], io);
    for (cb::Buffer& b : io.buffers().outputs) std::memset(b.data, poison ? 0xFF : 0, b.size());
    cb_run(io);
    CB_CHECK(cudaDeviceSynchronize());
    CB_CHECK(cudaGetLastError());
    save(argv[i + 1], io);
  }
  // Destroying the context is what lets memcheck's leak check see allocations never freed.
  CB_CHECK(cudaDeviceReset());
  return 0;
}
