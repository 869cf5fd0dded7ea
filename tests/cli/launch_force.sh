#!/usr/bin/env bash
# plan --emit-launch --force with fewer recipes than the earlier run: the launch files of the
# earlier run's extra ranks (OUT-stem.rankN.{yaml,launch.sh,sbatch}, N above this run's count)
# are removed and listed; without --force the run is refused and nothing is touched.
# usage: launch_force.sh MESHPLAN
. "$(dirname "$0")/script_lib.sh"
plan=(plan --model llama3.1-8b --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64 --out "$dir/r.yaml" --emit-launch)

"$mp" "${plan[@]}" --top 3 >"$dir/log" 2>&1; rc=$?
check '[ $rc -eq 0 ] && grep -q "^wrote 9 launch files beside $dir/r.yaml$" "$dir/log"'
check '[ -f "$dir/r.rank3.sbatch" ]'

# Without --force: refused, the earlier files stay.
"$mp" "${plan[@]}" --top 1 >"$dir/log" 2>&1; rc=$?
check '[ $rc -eq 2 ] && grep -q "pass --force to replace it" "$dir/log"'
check '[ -f "$dir/r.rank2.yaml" ] && [ -f "$dir/r.rank3.launch.sh" ]'

# With --force: rank 1 rewritten, ranks 2 and 3 removed and listed.
"$mp" "${plan[@]}" --top 1 --force >"$dir/log" 2>&1; rc=$?
check '[ $rc -eq 0 ] && grep -q "^wrote 3 launch files beside $dir/r.yaml$" "$dir/log"'
check 'grep -qF "removed 6 launch files of an earlier run beyond this run'"'"'s 1 recipes (--force): $dir/r.rank2.yaml $dir/r.rank2.launch.sh $dir/r.rank2.sbatch $dir/r.rank3.yaml $dir/r.rank3.launch.sh $dir/r.rank3.sbatch" "$dir/log"'
check '[ "$(ls "$dir" | sort | tr "\n" " ")" = "log r.rank1.launch.sh r.rank1.sbatch r.rank1.yaml r.yaml " ]'

# With --format yaml the list goes to stderr: stdout stays one YAML stream.
"$mp" "${plan[@]}" --top 3 --force >/dev/null 2>&1
"$mp" "${plan[@]}" --top 2 --force --format yaml >"$dir/out.yaml" 2>"$dir/log"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^meshplan: removed 3 launch files of an earlier run beyond this run.s 2 recipes (--force): $dir/r.rank3.yaml" "$dir/log"'
check '! grep -q "removed" "$dir/out.yaml" && [ ! -e "$dir/r.rank3.yaml" ] && [ -f "$dir/r.rank2.sbatch" ]'
finish
