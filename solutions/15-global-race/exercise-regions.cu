// 15-global-race: the marked regions of the untouched exercises/15-global-race/degree.cu. The pristine exercise is
// solutions/15-global-race/degree.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
    // ANCHOR: bug
    // Count the edge at its target node.
    degree[dst[e] % NODES] += 1;
    // ANCHOR_END: bug
