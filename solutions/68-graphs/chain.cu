// 68-graphs: the highest vibration mode of a chain of `n` unit masses joined by springs, by power
// iteration. Mass i hangs between spring k[i] on its left (k[0] ties mass 0 to a wall) and spring
// k[i + 1] on its right; the last mass's right end is free. The chain's stiffness matrix K gives
// the spring forces, (K x)_i = k[i] (x_i - x_{i-1}) + k[i+1] (x_i - x_{i+1}), and each of `steps`
// steps of power iteration computes y = K x, its length |y|, and the next x = y / |y|. x tends to the
// mode of the highest frequency, and |y| to its eigenvalue (the frequency squared): `mode` is the
// last x, `lambda` the last |y|.
//
// A step is four small kernels, each needing the whole result of the one before: the forces, the
// sum of their squares (per block, then of the blocks' sums), and the scaling by that length.
//
// The answer is right. It is slow: count the launches in one call, and set what each costs the host
// against the microsecond or two of work each kernel does.
//
// `check` clocks the whole call of cb_run and profiles the kernels that exercise.toml's [timing]
// names: stiffness, block_norms, finish_norm and normalize. Give your kernels names from that list.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;

// y = K x: one thread per mass, the forces of its two springs (a wall at the left end, nothing at
// the right).
__global__ void stiffness(const float* k, const float* x, float* y, int n) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  const float left = i > 0 ? x[i - 1] : 0.0f;
  float force = k[i] * (x[i] - left);
  if (i + 1 < n) force += k[i + 1] * (x[i] - x[i + 1]);
  y[i] = force;
}

// partial[b] = the sum of y[i]^2 over block b's masses: a tree in shared memory.
__global__ void block_norms(const float* y, float* partial, int n) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;
  const int i = blockIdx.x * BLOCK + t;
  const float v = i < n ? y[i] : 0.0f;
  s[t] = v * v;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = s[0];
}

// One block: |y| from the blocks' sums; *lambda = |y| and *scale = 1 / |y| for the next kernel.
__global__ void finish_norm(const float* partial, int blocks, float* scale, float* lambda) {
  __shared__ float s[BLOCK];
  const int t = threadIdx.x;
  float acc = 0.0f;
  for (int b = t; b < blocks; b += BLOCK) acc += partial[b];
  s[t] = acc;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) {
    const float length = sqrtf(s[0]);
    *lambda = length;
    *scale = 1.0f / length;
  }
}

// x = y / |y|.
__global__ void normalize(const float* y, const float* scale, float* x, int n) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) x[i] = y[i] * *scale;
}

// The chain on the GPU: its springs, the iterate x and K x, the blocks' sums and the two scalars.
struct Chain {
  const float* k;
  float* x;
  float* y;
  float* partial;
  float* scale;
  float* lambda;
  int n;
  int blocks;
};

// ANCHOR: steps
// One step's four launches, in `stream`.
void launch_step(const Chain& c, cudaStream_t stream) {
  stiffness<<<c.blocks, BLOCK, 0, stream>>>(c.k, c.x, c.y, c.n);
  CB_CHECK(cudaGetLastError());
  block_norms<<<c.blocks, BLOCK, 0, stream>>>(c.y, c.partial, c.n);
  CB_CHECK(cudaGetLastError());
  finish_norm<<<1, BLOCK, 0, stream>>>(c.partial, c.blocks, c.scale, c.lambda);
  CB_CHECK(cudaGetLastError());
  normalize<<<c.blocks, BLOCK, 0, stream>>>(c.y, c.scale, c.x, c.n);
  CB_CHECK(cudaGetLastError());
}

// The kernels stay as they are; what changes is how they reach the GPU. One step is recorded once
// into a CUDA graph (a capture runs nothing: the stream notes each launch and its order), the graph
// is instantiated once (the driver checks and packs all four launches then), and the step is
// launched `steps` times as one graph: one call into the driver per step instead of four, and the
// GPU runs the four kernels back to back. Every step reads and writes the same buffers, so the same
// graph serves every step. It is built in each call and destroyed at its end (destroying a graph
// that is still running frees it once it is done): the next call may get other buffers.
void run_steps(const Chain& c, int steps, cudaStream_t stream) {
  cudaGraph_t graph;
  cudaGraphExec_t step;
  CB_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  launch_step(c, stream);
  CB_CHECK(cudaStreamEndCapture(stream, &graph));
  CB_CHECK(cudaGraphInstantiate(&step, graph, 0));
  for (int s = 0; s < steps; s++) CB_CHECK(cudaGraphLaunch(step, stream));
  CB_CHECK(cudaGraphExecDestroy(step));
  CB_CHECK(cudaGraphDestroy(graph));
}
// ANCHOR_END: steps

void cb_run(cb::Io& io) {
  const int n = static_cast<int>(io.param("n"));
  const int steps = static_cast<int>(io.param("steps"));
  if (n < 1 || steps < 1) {
    std::fprintf(stderr, "68-graphs: n = %d, steps = %d; both must be at least 1\n", n, steps);
    std::exit(2);
  }
  // Kept between calls, as an application keeps them: a stream of the program's own, and a pool of
  // stream-ordered allocations that keeps its memory (cudaMalloc and cudaFree would cost each call
  // more, and vary more, than its launches do).
  static cudaStream_t stream = [] {
    cudaStream_t s;
    cudaMemPool_t pool;
    uint64_t keep_all = UINT64_MAX;
    CB_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CB_CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    CB_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
    return s;
  }();
  Chain c{};
  c.n = n;
  c.blocks = (n + BLOCK - 1) / BLOCK;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  float *d_k, *d_x, *d_y, *d_partial, *d_scalars;
  CB_CHECK(cudaMallocAsync(&d_k, bytes, stream));
  CB_CHECK(cudaMallocAsync(&d_x, bytes, stream));
  CB_CHECK(cudaMallocAsync(&d_y, bytes, stream));
  CB_CHECK(cudaMallocAsync(&d_partial, c.blocks * sizeof(float), stream));
  CB_CHECK(cudaMallocAsync(&d_scalars, 2 * sizeof(float), stream));
  c.k = d_k;
  c.x = d_x;
  c.y = d_y;
  c.partial = d_partial;
  c.scale = d_scalars;
  c.lambda = d_scalars + 1;
  CB_CHECK(cudaMemcpyAsync(d_k, io.input<float>("k"), bytes, cudaMemcpyHostToDevice, stream));
  CB_CHECK(cudaMemcpyAsync(d_x, io.input<float>("x0"), bytes, cudaMemcpyHostToDevice, stream));
  run_steps(c, steps, stream);
  CB_CHECK(cudaMemcpyAsync(io.output<float>("mode"), d_x, bytes, cudaMemcpyDeviceToHost, stream));
  CB_CHECK(cudaMemcpyAsync(io.output<float>("lambda"), c.lambda, sizeof(float), cudaMemcpyDeviceToHost, stream));
  CB_CHECK(cudaFreeAsync(d_k, stream));
  CB_CHECK(cudaFreeAsync(d_x, stream));
  CB_CHECK(cudaFreeAsync(d_y, stream));
  CB_CHECK(cudaFreeAsync(d_partial, stream));
  CB_CHECK(cudaFreeAsync(d_scalars, stream));
  CB_CHECK(cudaStreamSynchronize(stream));
}
