// 39-hash-insert: the marked regions of the untouched exercises/39-hash-insert/distinct.cu. The pristine exercise is
// solutions/39-hash-insert/distinct.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
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
