// cudabugs harness API. The workbook owns this file: exercises include it, learners do not edit it.
//
// The grader writes seeded inputs to a file, the harness (harness.cu) loads them, calls the exercise's
// `cb_run`, and writes the outputs back for the grader to compare with its Rust reference. For the
// timed runs the grader instead shares memory with the harness and starts, clocks and checks every
// call itself (`--serve`, harness.cu).
//
// Only C headers and CUDA's: every build of every exercise compiles this file, and <string> and
// <vector> cost about a second of nvcc's host passes a build (the buffers' layout is harness.cu's).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

// What one call of cb_run sees: the case's parameters, its input buffers and its output buffers
// (host memory, sized by the manifest).
class Io {
 public:
  long long param(const char* name) const;
  template <class T> const T* input(const char* name, size_t* len = nullptr) const {
    return static_cast<const T*>(find(name, dtype_of<T>::value, false, len));
  }
  template <class T> T* output(const char* name, size_t* len = nullptr) {
    return static_cast<T*>(find(name, dtype_of<T>::value, true, len));
  }

  // Filled by the harness, which alone knows their layout (harness.cu).
  struct Buffers;
  Io();
  ~Io();
  Io(const Io&) = delete;
  Io& operator=(const Io&) = delete;
  Buffers& buffers() const { return *buffers_; }

 private:
  void* find(const char* name, DType want, bool output, size_t* len) const;
  Buffers* buffers_;
};

}  // namespace cb

// The exercise's entry point: allocate, copy, launch, check, copy back, free.
void cb_run(cb::Io& io);
