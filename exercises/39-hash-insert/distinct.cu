// 39-hash-insert: the number of distinct tokens in each document of a batch (a vocabulary
// statistic, and the first step of deduplicating a corpus).
//
// The batch holds `segments` documents of `size` token ids each. One block per document builds
// the set of its tokens in a hash table in shared memory (open addressing with linear probing,
// TABLE slots for at most MAX_SIZE tokens, so the table is never more than half full), then counts
// the slots that hold a token. The 256 threads of the block insert their tokens at the same time.
// Run it plainly and the counts look plausible: compare them with the reference and many are one
// or more short. Run the check and see what the tool says.
#include <cstdio>
#include <cstdlib>
#include "cudabugs.cuh"

constexpr int BLOCK = 256;
constexpr int LOG2_TABLE = 12;
constexpr int TABLE = 1 << LOG2_TABLE;  // 4096 slots: 16 KiB of shared memory
constexpr int MAX_SIZE = TABLE / 2;     // tokens per document
constexpr unsigned EMPTY = 0xffffffffu; // no token id is this large

// Multiplicative (Fibonacci) hashing: the top LOG2_TABLE bits of key * 2^32 / golden ratio.
__device__ unsigned home_slot(unsigned key) { return (key * 2654435761u) >> (32 - LOG2_TABLE); }

// ANCHOR: bug
// Put `key` into the block's table: walk from its home slot to the first slot that holds the key
// already (nothing to do) or is empty (the key is new: store it there).
__device__ void insert(unsigned* table, unsigned key) {
  unsigned slot = home_slot(key);
  for (int probe = 0; probe < TABLE; ++probe) {
    if (table[slot] == EMPTY) {
      table[slot] = key;
      return;
    }
    if (table[slot] == key) return;
    slot = (slot + 1) % TABLE;
  }
}
// ANCHOR_END: bug

__global__ void distinct_tokens(const unsigned* tokens, int size, unsigned* distinct) {
  __shared__ unsigned table[TABLE];
  __shared__ unsigned count;
  const int t = threadIdx.x;
  for (int i = t; i < TABLE; i += BLOCK) table[i] = EMPTY;
  if (t == 0) count = 0;
  __syncthreads();

  const unsigned* doc = tokens + static_cast<size_t>(blockIdx.x) * size;
  for (int i = t; i < size; i += BLOCK) insert(table, doc[i]);
  __syncthreads();

  // Every slot that holds a token is one distinct token.
  unsigned mine = 0;
  for (int i = t; i < TABLE; i += BLOCK) mine += table[i] != EMPTY;
  atomicAdd(&count, mine);
  __syncthreads();
  if (t == 0) distinct[blockIdx.x] = count;
}

void cb_run(cb::Io& io) {
  const int segments = static_cast<int>(io.param("segments"));
  const int size = static_cast<int>(io.param("size"));
  if (size > MAX_SIZE) {
    std::fprintf(stderr, "documents of %d tokens: the table holds at most %d\n", size, MAX_SIZE);
    std::exit(2);
  }
  const size_t n = static_cast<size_t>(segments) * size;
  const unsigned* h_tokens = io.input<unsigned>("tokens");
  unsigned* h_distinct = io.output<unsigned>("distinct");

  unsigned *d_tokens, *d_distinct;
  CB_CHECK(cudaMalloc(&d_tokens, (n > 0 ? n : 1) * sizeof(unsigned)));
  CB_CHECK(cudaMalloc(&d_distinct, segments * sizeof(unsigned)));
  CB_CHECK(cudaMemcpy(d_tokens, h_tokens, n * sizeof(unsigned), cudaMemcpyHostToDevice));
  distinct_tokens<<<segments, BLOCK>>>(d_tokens, size, d_distinct);
  CB_CHECK(cudaGetLastError());
  CB_CHECK(cudaMemcpy(h_distinct, d_distinct, segments * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CB_CHECK(cudaFree(d_tokens));
  CB_CHECK(cudaFree(d_distinct));
}
