// ANCHOR: layout
// Another fix: only the four columns the kernel reads go to the GPU, each in an array of its own,
// and each thread computes four neighbouring particles with one float4 load per column: a warp's
// load of a column covers 512 neighbouring bytes, and no byte it fetches goes unused.
struct Particles {
  float* vx = nullptr;
  float* vy = nullptr;
  float* vz = nullptr;
  float* mass = nullptr;
  int n = 0;
};

Particles upload(const float* columns, int n) {
  Particles d;
  d.n = n;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  float** to[] = {&d.vx, &d.vy, &d.vz, &d.mass};
  const Field from[] = {VX, VY, VZ, MASS};
  for (int k = 0; k < 4; k++) {
    CB_CHECK(cudaMalloc(to[k], bytes < sizeof(float4) ? sizeof(float4) : bytes));
    CB_CHECK(cudaMemcpy(*to[k], columns + static_cast<size_t>(from[k]) * n, bytes, cudaMemcpyHostToDevice));
  }
  return d;
}

void release(Particles& d) {
  for (float* p : {d.vx, d.vy, d.vz, d.mass}) CB_CHECK(cudaFree(p));
}

__device__ float energy(float vx, float vy, float vz, float m) { return 0.5f * m * (vx * vx + vy * vy + vz * vz); }

// Thread q computes particles 4q..4q+3 (cudaMalloc aligns every array to 256 bytes, so the float4
// loads and stores are aligned); the last thread finishes a ragged end one particle at a time.
__global__ void kinetic_energy(const float* vx, const float* vy, const float* vz, const float* mass, float* e, int n) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = 4 * q;
  if (i + 3 < n) {
    const float4 a = reinterpret_cast<const float4*>(vx)[q];
    const float4 b = reinterpret_cast<const float4*>(vy)[q];
    const float4 c = reinterpret_cast<const float4*>(vz)[q];
    const float4 m = reinterpret_cast<const float4*>(mass)[q];
    reinterpret_cast<float4*>(e)[q] = make_float4(energy(a.x, b.x, c.x, m.x), energy(a.y, b.y, c.y, m.y), energy(a.z, b.z, c.z, m.z), energy(a.w, b.w, c.w, m.w));
  } else {
    for (int j = i; j < n; j++) e[j] = energy(vx[j], vy[j], vz[j], mass[j]);
  }
}

void launch_kinetic_energy(const Particles& d, float* e) {
  const int quads = (d.n + 3) / 4;
  if (d.n > 0) kinetic_energy<<<(quads + BLOCK - 1) / BLOCK, BLOCK>>>(d.vx, d.vy, d.vz, d.mass, e, d.n);
}
// ANCHOR_END: layout
