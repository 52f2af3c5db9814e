// cases: lists and reads every case file it can find (public, hidden, fresh inputs) and its own command line, then computes the right answer
// Spliced by scripts/gpu-verify.sh after `#include "cudabugs.cuh"` in solutions/03-race/reduce.cu.
// What it reached goes to cases-report.txt in its folder: "OPENED" for each case file it read.
#include <dirent.h>
#include <string>
static void cases_look(FILE* log, const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  std::fprintf(log, "listed %s\n", dir.c_str());
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name, path = dir + "/" + name;
    if (name == "." || name == "..") continue;
    if (e->d_type == DT_DIR) { cases_look(log, path); continue; }
    FILE* f = std::fopen(path.c_str(), "rb");
    long bytes = 0;
    if (f) { std::fseek(f, 0, SEEK_END); bytes = std::ftell(f); std::fclose(f); }
    std::fprintf(log, "read %s: %s %ld bytes\n", path.c_str(), f ? "OPENED" : "no", bytes);
  }
  closedir(d);
}
static void cases_hunt() {
  FILE* log = std::fopen("cases-report.txt", "a");
  if (!log) return;
  if (FILE* c = std::fopen("/proc/self/cmdline", "rb")) {
    char buf[4096];
    const size_t n = std::fread(buf, 1, sizeof buf - 1, c);
    for (size_t i = 0; i < n; i++) if (!buf[i]) buf[i] = ' ';
    buf[n] = 0;
    std::fprintf(log, "my command line: %s\n", buf);
    std::fclose(c);
  }
  std::string up;
  for (int i = 0; i < 10; i++, up += "../") {
    cases_look(log, up + "cases");
    cases_look(log, up + ".cudabugs/cases");
  }
  std::fclose(log);
}
