// ANCHOR: bug
// Another fix: the same atomic claim of a slot, with triangular probing (home, +1, +3, +6, ...:
// step k moves k slots further), which visits every slot of a power-of-two table and breaks up the
// runs of full slots that linear probing builds. The key is new exactly when this thread's
// atomicCAS found the slot empty; every thread that inserts the same key walks the same slots, so
// it finds the key where the first one stored it.
__device__ void insert(unsigned* table, unsigned key) {
  unsigned slot = home_slot(key);
  for (unsigned step = 1; step <= TABLE; ++step) {
    const unsigned seen = atomicCAS(&table[slot], EMPTY, key);
    if (seen == EMPTY || seen == key) return;
    slot = (slot + step) & (TABLE - 1);
  }
}
// ANCHOR_END: bug
