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
// A particle is a record of its 16 fields, 64 bytes, and the GPU holds an array of records (an
// array of structures), built on the host from the columns.
struct Particle {
  float x, y, z, vx, vy, vz, ax, ay, az, mass, charge, radius, density, pressure, temperature, age;
};
static_assert(sizeof(Particle) == FIELDS * sizeof(float), "a record is its 16 fields");

struct Particles {
  Particle* p = nullptr;
  int n = 0;
};

Particles upload(const float* columns, int n) {
  std::vector<Particle> host(n);
  for (int i = 0; i < n; i++) {
    float* fields = reinterpret_cast<float*>(&host[i]);  // the record's 16 floats, in Field order
    for (int f = 0; f < FIELDS; f++) fields[f] = columns[static_cast<size_t>(f) * n + i];
  }
  Particles d;
  d.n = n;
  CB_CHECK(cudaMalloc(&d.p, static_cast<size_t>(n) * sizeof(Particle)));
  CB_CHECK(cudaMemcpy(d.p, host.data(), static_cast<size_t>(n) * sizeof(Particle), cudaMemcpyHostToDevice));
  return d;
}

void release(Particles& d) { CB_CHECK(cudaFree(d.p)); }

// One thread per particle reads the 4 fields it needs from its record.
__global__ void kinetic_energy(const Particle* p, float* e, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Particle& q = p[i];
  e[i] = 0.5f * q.mass * (q.vx * q.vx + q.vy * q.vy + q.vz * q.vz);
}

void launch_kinetic_energy(const Particles& d, float* e) {
  if (d.n > 0) kinetic_energy<<<(d.n + BLOCK - 1) / BLOCK, BLOCK>>>(d.p, e, d.n);
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
