// cudabugs harness API. The workbook owns this file: exercises include it, learners do not edit it.
//
// The grader writes seeded inputs to a file, the harness (harness.cu) loads them, calls the exercise's
// `cb_run`, and writes the outputs back for the grader to compare with its Rust reference. For the
// timed runs the grader instead shares memory with the harness and starts, clocks and checks every
// call itself (`--serve`, harness.cu).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>
#include <cuda_runtime.h>

// Check a CUDA runtime call; on failure print where and exit with status 3 (the grader reports it).
#define CB_CHECK(call)                                                                          \
  do {                                                                                          \
    cudaError_t cb_err_ = (call);                                                               \
    if (cb_err_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "CUDA error at %s:%d: %s (%s)\n", __FILE__, __LINE__,                \
                   cudaGetErrorString(cb_err_), #call);                                         \
      std::exit(3);                                                                             \
    }                                                                                           \
  } while (0)

namespace cb {

// Element types; the numbers match grader/src/exercise/dtype.rs (DType::code).
enum class DType : uint8_t { F32 = 1, F64 = 2, I32 = 3, U32 = 4 };
template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::F32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::F64; };
template <> struct dtype_of<int> { static constexpr DType value = DType::I32; };
template <> struct dtype_of<unsigned> { static constexpr DType value = DType::U32; };

// Host memory for the buffers cb_run receives: pageable, or page-locked (cudaMallocHost) where the
// manifest says `host_memory = "pinned"` (the harness's --pinned). Implemented in harness.cu.
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

// What one call of cb_run sees: the case's parameters, its input buffers and its output buffers
// (host memory, sized by the manifest).
class Io {
 public:
  long long param(const char* name) const;
  template <class T> const T* input(const char* name, size_t* len = nullptr) const {
    const Buffer& b = find(inputs_, name, dtype_of<T>::value, "input");
    if (len) *len = b.len;
    return reinterpret_cast<const T*>(b.data);
  }
  template <class T> T* output(const char* name, size_t* len = nullptr) {
    Buffer& b = const_cast<Buffer&>(find(outputs_, name, dtype_of<T>::value, "output"));
    if (len) *len = b.len;
    return reinterpret_cast<T*>(b.data);
  }

  // Filled by the harness.
  std::vector<std::pair<std::string, long long>> params_;
  std::vector<Buffer> inputs_, outputs_;

 private:
  const Buffer& find(const std::vector<Buffer>& list, const char* name, DType want, const char* what) const;
};

}  // namespace cb

// The exercise's entry point: allocate, copy, launch, check, copy back, free.
void cb_run(cb::Io& io);
