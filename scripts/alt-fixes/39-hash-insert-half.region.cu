// ANCHOR: bug
// A half-fix: the store is atomic now, but the thread still decides from a plain read that the slot
// is free, and never asks atomicCAS whether it won. Two threads that read the same empty slot both
// call atomicCAS; one key is stored, the other thread's CAS fails (the slot holds the first key)
// and it returns as if its key were in the table. The lost insert is the same as before.
__device__ void insert(unsigned* table, unsigned key) {
  unsigned slot = home_slot(key);
  for (int probe = 0; probe < TABLE; ++probe) {
    const unsigned seen = table[slot];
    if (seen == EMPTY) {
      atomicCAS(&table[slot], EMPTY, key);
      return;
    }
    if (seen == key) return;
    slot = (slot + 1) % TABLE;
  }
}
// ANCHOR_END: bug
