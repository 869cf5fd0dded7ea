#!/usr/bin/env bash
# --out is whole or absent: a run killed at any moment (SIGTERM, SIGINT, SIGKILL) leaves
# either no file or the complete file, and after SIGTERM/SIGINT no temporary file either;
# a missing or read-only directory fails with exit 2 and writes nothing.
# usage: out_file.sh MESHPLAN
set -u
mp=$1
dir=$(mktemp -d)
# Only this shell cleans up: a background child killed before its exec runs the inherited
# EXIT trap too, and would remove $dir under the test ($$ is this shell's PID in children).
trap '[ "$BASHPID" = "$$" ] && rm -rf "$dir"' EXIT
args=(plan --model llama3.1-70b --system dgx-h100 --gpus 64 --seq-len 8192 --global-batch 512 --top 20)
"$mp" "${args[@]}" --out "$dir/ref.yaml" >/dev/null || { echo "reference run failed"; exit 1; }
fail=0
for sig in TERM INT KILL; do
  for delay in 0 0.01 0.02 0.05 0.1 0.2 0.4; do
    f="$dir/out-$sig-$delay.yaml"
    "$mp" "${args[@]}" --out "$f" >/dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    kill -s "$sig" "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    if [ -e "$f" ] && ! cmp -s "$f" "$dir/ref.yaml"; then echo "partial file after SIG$sig at ${delay}s"; fail=1; fi
    if [ "$sig" != KILL ] && ls "$dir" | grep -q '\.tmp\.'; then echo "temporary file left after SIG$sig at ${delay}s"; fail=1; fi
    rm -f "$dir"/*.tmp.*
  done
done
# Missing directory: exit 2, nothing created.
"$mp" "${args[@]}" --out "$dir/missing/x.yaml" >/dev/null 2>&1; rc=$?
[ "$rc" = 2 ] && [ ! -e "$dir/missing" ] || { echo "missing directory: rc=$rc"; fail=1; }
# Read-only directory (skipped as root, who can write anyway).
if [ "$(id -u)" != 0 ]; then
  mkdir "$dir/ro" && chmod 555 "$dir/ro"
  "$mp" "${args[@]}" --out "$dir/ro/x.yaml" >/dev/null 2>&1; rc=$?
  [ "$rc" = 2 ] && [ -z "$(ls "$dir/ro")" ] || { echo "read-only directory: rc=$rc"; fail=1; }
  chmod 755 "$dir/ro"
fi
# Existing file without --force: kept byte for byte.
echo keep >"$dir/keep.yaml"
"$mp" "${args[@]}" --out "$dir/keep.yaml" >/dev/null 2>&1; rc=$?
[ "$rc" = 2 ] && [ "$(cat "$dir/keep.yaml")" = keep ] || { echo "existing file: rc=$rc"; fail=1; }
# --out naming the --model file (here through a second spelling), even with --force: exit 2,
# the model file kept byte for byte.
here=$(cd "$(dirname "$0")" && pwd)
cp "$here/../../models/llama3.1-8b.json" "$dir/model.json"
"$mp" plan --model "$dir/model.json" --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 \
  --out "$dir/./model.json" --force >/dev/null 2>"$dir/err.txt"; rc=$?
[ "$rc" = 2 ] && cmp -s "$dir/model.json" "$here/../../models/llama3.1-8b.json" && grep -q "input of this run" "$dir/err.txt" ||
  { echo "--out naming the --model file: rc=$rc"; fail=1; }
exit $fail
