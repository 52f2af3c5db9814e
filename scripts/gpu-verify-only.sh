set -u
export CUDABUGS_NO_INSTALL=1 PATH="$PATH:/usr/local/cuda/bin"
B=target/release/xtask
{ nvidia-smi; nvcc --version; compute-sanitizer --version; ncu --version; "$B" toolkit show; } >"$OUT/env.txt" 2>&1
"$B" verify --record "$OUT/verification.json" --keep "$OUT/fixtures" >"$OUT/verify.txt" 2>&1; echo "verify exit=$?" >>"$OUT/verify.txt"
"$B" verify --record "$OUT/verification-second.json" >"$OUT/verify-second.txt" 2>&1; echo "verify exit=$?" >>"$OUT/verify-second.txt"
tar czf "$OUT/fixtures.tgz" -C "$OUT" fixtures && rm -rf "$OUT/fixtures"
sed -n '/^exercise  /,$p' "$OUT/verify.txt" "$OUT/verify-second.txt"
