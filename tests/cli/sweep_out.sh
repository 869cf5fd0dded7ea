#!/usr/bin/env bash
# plan --sweep-gpus/--sweep-seq --out: the best recipe of every point is written (YAML, one
# document per point that has a layout, JSON with --format json), whole, never replacing an
# existing file without --force; a point without a layout is listed and exits 1.
# (--out and --report were ignored by sweeps: nothing was written, exit 0.)
# usage: sweep_out.sh MESHPLAN
. "$(dirname "$0")/script_lib.sh"
sweep=(plan --model llama3.1-8b --system dgx-h100 --sweep-gpus 8,16 --sweep-seq 4096,8192 --global-batch 64)

"$mp" "${sweep[@]}" --out "$dir/s.yaml" >"$dir/log" 2>&1; rc=$?
check '[ $rc -eq 0 ]'
check 'grep -q "wrote 4 recipes (the best of each point) to $dir/s.yaml" "$dir/log"'
# Four documents, in point order, each a recipe of its point.
check '[ "$(grep -c "^---$" "$dir/s.yaml")" -eq 3 ]'
check '[ "$(grep -c "^  global_batch_size: 64$" "$dir/s.yaml")" -eq 4 ]'
check '[ "$(grep "^# meshplan recipe" "$dir/s.yaml" | sed "s/ (NVIDIA.*seq_len/ seq_len/; s/, global.*//" | tr "\n" "|")" = "# meshplan recipe 1: llama3.1-8b on 8 GPUs of dgx-h100 seq_len 4096|# meshplan recipe 2: llama3.1-8b on 8 GPUs of dgx-h100 seq_len 8192|# meshplan recipe 3: llama3.1-8b on 16 GPUs of dgx-h100 seq_len 4096|# meshplan recipe 4: llama3.1-8b on 16 GPUs of dgx-h100 seq_len 8192|" ]'
check 'grep -q "^#   16 GPUs, seq_len 8192: recipe 4$" "$dir/s.yaml"'
# The file's layouts are the table's (first point: the table line's layout is the recipe's).
check '[ "$(grep -m1 "^ *8 *4096 " "$dir/log" | sed "s/^.*  //")" = "$(grep -m1 "^# layout: " "$dir/s.yaml" | sed "s/^# layout: //")" ]'

# An existing file is not replaced without --force (checked before searching), and is with it.
cp "$dir/s.yaml" "$dir/keep.yaml"
"$mp" "${sweep[@]}" --out "$dir/s.yaml" >"$dir/log" 2>&1; rc=$?
check '[ $rc -eq 2 ] && grep -q "s.yaml: error: --out: file exists; pass --force to replace it (nothing was written)" "$dir/log"'
check 'cmp -s "$dir/s.yaml" "$dir/keep.yaml"'
check '! grep -q "gpus *seq_len" "$dir/log"'
"$mp" plan --model llama3.1-8b --system dgx-h100 --sweep-gpus 8,16 --sweep-seq 4096,8192 --global-batch 128 --out "$dir/s.yaml" --force >/dev/null 2>&1; rc=$?
check '[ $rc -eq 0 ] && [ "$(grep -c "^  global_batch_size: 128$" "$dir/s.yaml")" -eq 4 ]'

# JSON with --format json: every point with its best recipe.
"$mp" "${sweep[@]}" --format json --out "$dir/s.json" >/dev/null 2>&1; rc=$?
check '[ $rc -eq 0 ]'
# Points in order (keys are sorted: each point's "best" plan comes before its "gpus" / "seq_len").
check '[ "$(grep -E "^      \"(gpus|seq_len)\": " "$dir/s.json" | tr -dc "0-9\n" | paste -sd " ")" = "8 4096 8 8192 16 4096 16 8192" ]'
# Each point's plan was made for it: its request's GPU count, and tp*pp*cp*dp of its recipe equal the point's.
check '[ "$(grep -E "^          \"gpus\": " "$dir/s.json" | tr -dc "0-9\n" | paste -sd " ")" = "8 8 16 16" ]'
check 'awk "/^              \"(cp|dp|pp|tp)_size\": / { gsub(/[^0-9]/, \"\"); p *= \$0 } /^      \"gpus\": / { gsub(/[^0-9]/, \"\"); if (p != \$0) bad = 1; n++; p = 1 } BEGIN { p = 1 } END { exit bad || n != 4 }" "$dir/s.json"'

# A point without a layout: listed in the file, exit 1; the other point's recipe is written.
"$mp" plan --model llama3.1-405b --system dgx-h100 --sweep-gpus 8,64 --seq-len 8192 --global-batch 64 --out "$dir/n.yaml" >/dev/null 2>&1; rc=$?
check '[ $rc -eq 1 ]'
check 'grep -q "^#   8 GPUs, seq_len 8192: no layout fits (least [0-9.]* GiB per GPU)$" "$dir/n.yaml"'
check '[ "$(grep -c "^# meshplan recipe" "$dir/n.yaml")" -eq 1 ] && grep -q "^# meshplan recipe 1: llama3.1-405b on 64 GPUs" "$dir/n.yaml"'

# --report / --emit-launch describe one plan: refused before any search, nothing written.
"$mp" "${sweep[@]}" --report "$dir/r.html" >"$dir/log" 2>&1; rc=$?
check '[ $rc -eq 2 ] && grep -q "error: --report: expected a plan at one point (--gpus and --seq-len), found --sweep-gpus / --sweep-seq" "$dir/log" && [ ! -e "$dir/r.html" ]'
"$mp" "${sweep[@]}" --out "$dir/e.yaml" --emit-launch >"$dir/log" 2>&1; rc=$?
check '[ $rc -eq 2 ] && grep -q "error: --emit-launch: expected a plan at one point" "$dir/log" && [ ! -e "$dir/e.yaml" ]'
finish
