// 17-partial-copy: the marked regions of the untouched exercises/17-partial-copy/chunks.cu. The pristine exercise is
// solutions/17-partial-copy/chunks.cu with these regions put back: `reset` restores it, `list` compares
// against it and the book shows it, whatever has happened to the copy a learner edits.
// ANCHOR: bug
// Full chunks of CHUNK elements.
void process_in_chunks(const float* h_x, float* h_y, int n, float* d_chunk, float* d_y) {
  for (int off = 0; off + CHUNK <= n; off += CHUNK) {
    CB_CHECK(cudaMemcpy(d_chunk, h_x + off, CHUNK * sizeof(float), cudaMemcpyHostToDevice));
    square_plus_one<<<CHUNK / BLOCK, BLOCK>>>(d_chunk, d_y + off, CHUNK);
    CB_CHECK(cudaGetLastError());
  }
  CB_CHECK(cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
}
// ANCHOR_END: bug
