// spawn: the same tries from cb_run (see spawn.top.cu)
// Spliced by scripts/gpu-verify.sh at the start of cb_run in solutions/03-race/reduce.cu.
  static bool spawned = false;
  if (!spawned) { spawned = true; spawn_tries("cb_run"); }
