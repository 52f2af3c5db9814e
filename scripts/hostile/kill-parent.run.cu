// kill-parent: signals its parent and every process it can see, then computes the right answer
// Spliced by scripts/gpu-verify.sh at the start of cb_run in solutions/03-race/reduce.cu.
  static bool done = false;
  if (!done) { done = true; std::printf("my parent is %d\n", (int)getppid()); kill(getppid(), SIGKILL); kill(-1, SIGKILL); }
