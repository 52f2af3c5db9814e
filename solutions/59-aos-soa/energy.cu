// 59-aos-soa: the kinetic energy of every particle of a simulation, 0.5 m |v|^2, which the
// simulation adds up for its energy diagnostics. The particles arrive as 16 columns of n floats,
// one column per field in the order of `Field` (field f of particle i at f * n + i), as a
// checkpoint file stores them; how they are kept on the GPU is the program's choice.
//
// The answer is right. It is slow: see how many of the bytes the kernel's loads fetch it uses.
#include <vector>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

// The columns of the input, in order.
enum Field { X, Y, Z, VX, VY, VZ, AX, AY, AZ, MASS, CHARGE, RADIUS, DENSITY, PRESSURE, TEMPERATURE, AGE, FIELDS };

// ANCHOR: layout
// A structure of arrays: the GPU keeps the 16 columns as they come, one array per field (field f
// of particle i at f * n + i). A warp that reads a field reads 32 neighbouring floats, one 128-byte
// line, and fields the kernel does not use never leave DRAM.
struct Particles {
  float* columns = nullptr;
  int n = 0;
  float* field(Field f) const { return columns + static_cast<size_t>(f) * n; }
};

Particles upload(const float* columns, int n) {
  Particles d;
  d.n = n;
  const size_t bytes = static_cast<size_t>(FIELDS) * n * sizeof(float);
  CB_CHECK(cudaMalloc(&d.columns, bytes));
  CB_CHECK(cudaMemcpy(d.columns, columns, bytes, cudaMemcpyHostToDevice));
  return d;
}

void release(Particles& d) { CB_CHECK(cudaFree(d.columns)); }

// One thread per particle reads element i of the 4 columns it needs.
__global__ void kinetic_energy(const float* vx, const float* vy, const float* vz, const float* mass, float* e, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  e[i] = 0.5f * mass[i] * (vx[i] * vx[i] + vy[i] * vy[i] + vz[i] * vz[i]);
}

void launch_kinetic_energy(const Particles& d, float* e) {
  if (d.n > 0) kinetic_energy<<<(d.n + BLOCK - 1) / BLOCK, BLOCK>>>(d.field(VX), d.field(VY), d.field(VZ), d.field(MASS), e, d.n);
}
// ANCHOR_END: layout

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  Particles d = upload(io.input<float>("fields"), n);
  float* d_e;
  CB_CHECK(cudaMalloc(&d_e, n * sizeof(float)));
  launch_kinetic_energy(d, d_e);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(io.output<float>("e"), d_e, n * sizeof(float), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_e));
  release(d);
}
