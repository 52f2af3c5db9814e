// ANCHOR: layout
// A half-fix: still an array of 64-byte records, now aligned to 16 bytes so that the kernel reads
// the three 16-byte pieces that hold vx, vy, vz and mass with one float4 load each. Fewer load
// instructions, but the 32 lanes of each load still touch 32 records, and the same bytes come
// from DRAM: both halves of every record.
struct alignas(16) Particle {
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

// One thread per particle reads floats 0-3, 4-7 and 8-11 of its record as three float4s.
__global__ void kinetic_energy(const Particle* p, float* e, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float4* q = reinterpret_cast<const float4*>(p + i);
  const float4 a = q[0], b = q[1], c = q[2];  // (x, y, z, vx), (vy, vz, ax, ay), (az, mass, charge, radius)
  e[i] = 0.5f * c.y * (a.w * a.w + b.x * b.x + b.y * b.y);
}

void launch_kinetic_energy(const Particles& d, float* e) {
  if (d.n > 0) kinetic_energy<<<(d.n + BLOCK - 1) / BLOCK, BLOCK>>>(d.p, e, d.n);
}
// ANCHOR_END: layout
