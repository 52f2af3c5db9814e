// escape: reads the reference solution, writes outside its folder and connects to the network, then computes the right answer
// Spliced by scripts/gpu-verify.sh at the start of cb_run in solutions/03-race/reduce.cu.
  static bool done = false;
  if (!done) {
    done = true;
    // What it managed goes to a file in its own folder (stdout is not in check's report).
    FILE* log = std::fopen("escape-report.txt", "a");
    if (log) { dup2(fileno(log), 1); }
    const char* tries[] = {"../../../../../solutions/03-race/reduce.cu", "../reference/reduce.cu", "/tmp/cudabugs-escape-probe"};
    for (const char* p : tries) { FILE* f = std::fopen(p, "r"); std::printf("read %s: %s\n", p, f ? "OPENED" : "no"); if (f) std::fclose(f); }
    FILE* w = std::fopen("/tmp/cudabugs-escape-probe", "w"); std::printf("write /tmp: %s\n", w ? "WROTE" : "no"); if (w) std::fclose(w);
    FILE* e = std::fopen("../../../../../exercises/03-race/ESCAPED", "w"); std::printf("write exercises/: %s\n", e ? "WROTE" : "no"); if (e) std::fclose(e);
    int s = socket(AF_INET, SOCK_STREAM, 0); sockaddr_in a{}; a.sin_family = AF_INET; a.sin_port = htons(22); inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    std::printf("connect: %s\n", connect(s, (sockaddr*)&a, sizeof a) == 0 ? "CONNECTED" : "no");
  }
