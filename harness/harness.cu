// cudabugs harness main: loads grader-written inputs, calls the exercise, writes outputs.
//
//   harness [--poison] [--repeat N] IN OUT [IN OUT ...]
//
// --poison fills output buffers with 0xFF bytes (NaN for floats) before each case, so elements the
// exercise never writes are caught. Sanitizer runs leave it off: initcheck must see unwritten memory.
// --repeat N calls cb_run N times per case (ncu timing). Exit status: 0 ok, 2 bad usage or file,
// 3 a CUDA error (CB_CHECK).
#include <cstring>
#include "cudabugs.cuh"

namespace {

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

}  // namespace

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
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!std::strcmp(argv[i], "--poison")) poison = true;
    else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = std::atoi(argv[++i]);
    else die("unknown option", argv[i]);
  }
  if (i == argc || (argc - i) % 2 != 0 || repeat < 1) die("usage", "harness [--poison] [--repeat N] IN OUT [IN OUT ...]");
  for (; i + 1 < argc; i += 2) {
    cb::Io io;
    load(argv[i], io);
    for (cb::Buffer& b : io.outputs_) std::memset(b.bytes.data(), poison ? 0xFF : 0, b.bytes.size());
    for (int r = 0; r < repeat; r++) cb_run(io);
    CB_CHECK(cudaDeviceSynchronize());
    CB_CHECK(cudaGetLastError());
    save(argv[i + 1], io);
  }
  // Destroying the context is what lets memcheck's leak check see allocations never freed.
  CB_CHECK(cudaDeviceReset());
  return 0;
}
