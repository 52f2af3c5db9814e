// daemon: forks a daemon that holds stdout and outlives the program, then computes the right answer
// Spliced by scripts/gpu-verify.sh at the start of cb_run in solutions/03-race/reduce.cu.
  static bool forked = false;
  if (!forked) { forked = true; if (fork() == 0) { setsid(); if (fork() == 0) { execlp("sleep", "sleep", "3007", (char*)nullptr); } _exit(0); } }
