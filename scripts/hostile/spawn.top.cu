// spawn: tries fork, vfork, clone, posix_spawn, system() and execve from a static constructor and from cb_run, and says what each got
// Spliced by scripts/gpu-verify.sh after `#include "cudabugs.cuh"` in solutions/03-race/reduce.cu
// (and by grader/tests/no_spawn.rs). Each line goes to stderr and to spawn-report.txt in its folder.
#include <cerrno>
#include <cstring>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
extern char** environ;
static void spawn_say(const char* when, const char* what, bool ok, int err) {
  char line[256];
  std::snprintf(line, sizeof line, "spawn %s %s: %s%s\n", when, what, ok ? "SUCCEEDED" : "refused ", ok ? "" : std::strerror(err));
  std::fputs(line, stderr);
  if (FILE* f = std::fopen("spawn-report.txt", "a")) { std::fputs(line, f); std::fclose(f); }
}
static int spawn_child(void*) { _exit(0); }
static void spawn_tries(const char* when) {
  pid_t p = fork();
  if (p == 0) _exit(0);
  spawn_say(when, "fork", p > 0, errno);
  if (p > 0) waitpid(p, nullptr, 0);
  p = vfork();
  if (p == 0) _exit(0);
  spawn_say(when, "vfork", p > 0, errno);
  if (p > 0) waitpid(p, nullptr, 0);
  static char stack[64 << 10];
  p = clone(spawn_child, stack + sizeof stack, SIGCHLD, nullptr);
  spawn_say(when, "clone", p > 0, errno);
  if (p > 0) waitpid(p, nullptr, 0);
  char* argv[] = {const_cast<char*>("true"), nullptr};
  const int e = posix_spawn(&p, "/bin/true", nullptr, nullptr, argv, environ);
  spawn_say(when, "posix_spawn", e == 0, e);
  if (e == 0) waitpid(p, nullptr, 0);
  const int s = std::system("exit 7");
  spawn_say(when, "system", s != -1 && WIFEXITED(s) && WEXITSTATUS(s) == 7, errno);
  bool ran = false;
  std::thread([&] { ran = true; }).join();
  spawn_say(when, "thread", ran, 0);
  // Last: where it is not refused, the program is gone (no "execve: refused" line follows).
  std::fprintf(stderr, "spawn %s execve: trying\n", when);
  execve("/bin/true", argv, environ);
  spawn_say(when, "execve", false, errno);
}
__attribute__((constructor)) static void spawn_from_a_constructor() { spawn_tries("constructor"); }
