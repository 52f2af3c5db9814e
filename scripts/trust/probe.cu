// The facts the grader's trust boundary rests on, measured on the GPU machine (scripts/gpu-trust-probe.sh):
//
//   probe fd-parent MIB CMD...   make a memfd of MIB MiB (not close-on-exec), fill it, exec CMD with
//                                "{fd}" in CMD replaced by its number: does the fd reach a program
//                                that ncu or compute-sanitizer starts?
//   probe fd-child FD MIB        check the memfd (size, pattern), run a kernel, say "fd ok"
//   probe register MIB           map a memfd MAP_SHARED and cudaHostRegister it; time 256 MiB copies to
//                                the GPU from it, from cudaMallocHost and from malloc
//   probe l2-set | l2-get        set the persisting-L2 limit to the most the GPU allows and exit / read
//                                it in a new process: does one process's limit outlive it?
//   probe handshake N            two processes, one spinning on a word of shared memory the other
//                                writes: the round trip, as the grader's clock would see it
//   probe memcpy MIB THREADS     host memcpy bandwidth (the grader's copies into the shared inputs)
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define CHECK(call)                                                                          \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);  \
      std::exit(3);                                                                          \
    }                                                                                        \
  } while (0)

static double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

__global__ void touch(const unsigned* x, unsigned* out, size_t n) {
  unsigned s = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += x[i];
  atomicAdd(out, s);
}

static int fd_parent(int argc, char** argv) {
  const size_t bytes = size_t(std::atol(argv[2])) << 20;
  int fd = memfd_create("cudabugs-probe", 0);
  if (fd < 0 || ftruncate(fd, bytes) != 0) { std::perror("memfd"); return 2; }
  auto* p = static_cast<unsigned*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  for (size_t i = 0; i < bytes / 4; i++) p[i] = unsigned(i * 2654435761u);
  munmap(p, bytes);
  std::vector<std::string> words;
  for (int i = 3; i < argc; i++) {
    std::string w = argv[i];
    size_t at = w.find("{fd}");
    if (at != std::string::npos) w.replace(at, 4, std::to_string(fd));
    words.push_back(w);
  }
  std::vector<char*> args;
  for (auto& w : words) args.push_back(w.data());
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::perror("exec");
  return 2;
}

static int fd_child(char** argv) {
  int fd = std::atoi(argv[2]);
  const size_t bytes = size_t(std::atol(argv[3])) << 20;
  struct stat st;
  if (fstat(fd, &st) != 0) { std::printf("fd %d: not open in the child (%s)\n", fd, std::strerror(errno)); return 1; }
  auto* p = static_cast<unsigned*>(mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0));
  if (p == MAP_FAILED) { std::printf("fd %d: mmap failed (%s)\n", fd, std::strerror(errno)); return 1; }
  for (size_t i = 0; i < bytes / 4; i += 4099)
    if (p[i] != unsigned(i * 2654435761u)) { std::printf("fd %d: wrong data at %zu\n", fd, i); return 1; }
  unsigned *d, *out;
  CHECK(cudaMalloc(&d, 1 << 20));
  CHECK(cudaMalloc(&out, 4));
  CHECK(cudaMemcpy(d, p, 1 << 20, cudaMemcpyHostToDevice));
  touch<<<64, 256>>>(d, out, (1 << 20) / 4);
  CHECK(cudaDeviceSynchronize());
  std::printf("fd ok: %d holds %lld bytes as written\n", fd, (long long)st.st_size);
  return 0;
}

static double copy_gbps(void* dst, const void* src, size_t bytes) {
  double best = 1e9;
  for (int r = 0; r < 5; r++) {
    double t = now_s();
    CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    best = std::min(best, now_s() - t);
  }
  return bytes / best / 1e9;
}

static int register_probe(char** argv) {
  const size_t bytes = size_t(std::atol(argv[2])) << 20;
  int fd = memfd_create("cudabugs-register", 0);
  if (fd < 0 || ftruncate(fd, bytes) != 0) { std::perror("memfd"); return 2; }
  void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  std::memset(shared, 1, bytes);
  void* dev;
  CHECK(cudaMalloc(&dev, bytes));
  double t = now_s();
  cudaError_t e = cudaHostRegister(shared, bytes, cudaHostRegisterDefault);
  double reg_s = now_s() - t;
  std::printf("cudaHostRegister(memfd MAP_SHARED, %zu MiB): %s in %.2f ms\n", bytes >> 20, cudaGetErrorString(e), reg_s * 1e3);
  if (e == cudaSuccess) std::printf("  H2D from the registered memfd: %.1f GB/s\n", copy_gbps(dev, shared, bytes));
  else (void)cudaGetLastError();
  void* pinned;
  CHECK(cudaMallocHost(&pinned, bytes));
  std::memset(pinned, 1, bytes);
  std::printf("  H2D from cudaMallocHost: %.1f GB/s\n", copy_gbps(dev, pinned, bytes));
  void* pageable = std::malloc(bytes);
  std::memset(pageable, 1, bytes);
  std::printf("  H2D from malloc: %.1f GB/s\n", copy_gbps(dev, pageable, bytes));
  void* shared2 = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  std::printf("  H2D from the memfd, not registered: %.1f GB/s\n", copy_gbps(dev, shared2, bytes));
  return 0;
}

static int l2(const char* what) {
  if (!std::strcmp(what, "l2-reset")) {
    CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
    std::printf("l2-reset: set to 0\n");
    return 0;
  }
  size_t limit = 0;
  CHECK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s: persisting-L2 limit found %zu (most %d)\n", what, limit, prop.persistingL2CacheMaxSize);
  if (!std::strcmp(what, "l2-set")) {
    CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, prop.persistingL2CacheMaxSize));
    CHECK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
    std::printf("l2-set: now %zu, exiting without resetting it\n", limit);
  }
  return 0;
}

static int handshake(char** argv) {
  const int n = std::atoi(argv[2]);
  auto* words = static_cast<std::atomic<long>*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  new (&words[0]) std::atomic<long>(0);
  new (&words[8]) std::atomic<long>(0);
  pid_t child = fork();
  if (child == 0) {
    for (long k = 1; k <= n; k++) {
      while (words[0].load(std::memory_order_acquire) != k) {}
      words[8].store(k, std::memory_order_release);
    }
    _exit(0);
  }
  std::vector<double> rtt;
  for (long k = 1; k <= n; k++) {
    double t = now_s();
    words[0].store(k, std::memory_order_release);
    while (words[8].load(std::memory_order_acquire) != k) {}
    rtt.push_back(now_s() - t);
  }
  waitpid(child, nullptr, 0);
  std::sort(rtt.begin(), rtt.end());
  std::printf("handshake round trip over %d: median %.2f us, p99 %.2f us, max %.2f us\n", n, rtt[n / 2] * 1e6, rtt[n * 99 / 100] * 1e6, rtt.back() * 1e6);
  return 0;
}

static int memcpy_probe(char** argv) {
  const size_t bytes = size_t(std::atol(argv[2])) << 20;
  const int threads = std::atoi(argv[3]);
  std::vector<char> a(bytes, 1), b(bytes, 2);
  double best = 1e9;
  for (int r = 0; r < 5; r++) {
    double t = now_s();
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; i++)
      ts.emplace_back([&, i] { size_t part = bytes / threads; std::memcpy(b.data() + i * part, a.data() + i * part, part); });
    for (auto& x : ts) x.join();
    best = std::min(best, now_s() - t);
  }
  std::printf("memcpy %zu MiB on %d threads: %.2f ms (%.1f GB/s)\n", bytes >> 20, threads, best * 1e3, bytes / best / 1e9);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::string m = argv[1];
  if (m == "fd-parent" && argc > 3) return fd_parent(argc, argv);
  if (m == "fd-child" && argc > 3) return fd_child(argv);
  if (m == "register" && argc > 2) return register_probe(argv);
  if (m == "l2-set" || m == "l2-get" || m == "l2-reset") return l2(argv[1]);
  if (m == "handshake" && argc > 2) return handshake(argv);
  if (m == "memcpy" && argc > 3) return memcpy_probe(argv);
  std::fprintf(stderr, "unknown mode\n");
  return 2;
}
