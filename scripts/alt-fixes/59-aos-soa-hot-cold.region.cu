// ANCHOR: layout
// Another fix: split the record by use. The four fields this kernel needs go to an array of
// float4s (vx, vy, vz, mass), 16 bytes per particle; the other twelve stay in records of their
// own. One float4 load per thread, and a warp's 32 loads cover 512 neighbouring bytes.
struct Cold {
  float x, y, z, ax, ay, az, charge, radius, density, pressure, temperature, age;
};

struct Particles {
  float4* hot = nullptr;
  Cold* cold = nullptr;
  int n = 0;
};

Particles upload(const float* columns, int n) {
  auto column = [&](Field f) { return columns + static_cast<size_t>(f) * n; };
  std::vector<float4> hot(n);
  std::vector<Cold> cold(n);
  for (int i = 0; i < n; i++) {
    hot[i] = make_float4(column(VX)[i], column(VY)[i], column(VZ)[i], column(MASS)[i]);
    cold[i] = Cold{column(X)[i], column(Y)[i], column(Z)[i], column(AX)[i], column(AY)[i], column(AZ)[i],
                   column(CHARGE)[i], column(RADIUS)[i], column(DENSITY)[i], column(PRESSURE)[i], column(TEMPERATURE)[i], column(AGE)[i]};
  }
  Particles d;
  d.n = n;
  CB_CHECK(cudaMalloc(&d.hot, static_cast<size_t>(n) * sizeof(float4)));
  CB_CHECK(cudaMalloc(&d.cold, static_cast<size_t>(n) * sizeof(Cold)));
  CB_CHECK(cudaMemcpy(d.hot, hot.data(), static_cast<size_t>(n) * sizeof(float4), cudaMemcpyHostToDevice));
  CB_CHECK(cudaMemcpy(d.cold, cold.data(), static_cast<size_t>(n) * sizeof(Cold), cudaMemcpyHostToDevice));
  return d;
}

void release(Particles& d) {
  CB_CHECK(cudaFree(d.hot));
  CB_CHECK(cudaFree(d.cold));
}

__global__ void kinetic_energy(const float4* hot, float* e, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float4 v = hot[i];  // (vx, vy, vz, mass)
  e[i] = 0.5f * v.w * (v.x * v.x + v.y * v.y + v.z * v.z);
}

void launch_kinetic_energy(const Particles& d, float* e) {
  if (d.n > 0) kinetic_energy<<<(d.n + BLOCK - 1) / BLOCK, BLOCK>>>(d.hot, e, d.n);
}
// ANCHOR_END: layout
