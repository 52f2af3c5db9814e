// cases: the hunt from cb_run (see cases.top.cu)
// Spliced by scripts/gpu-verify.sh at the start of cb_run in solutions/03-race/reduce.cu.
  static bool hunted = false;
  if (!hunted) { hunted = true; cases_hunt(); }
