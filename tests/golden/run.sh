#!/usr/bin/env bash
# Runs one golden case of tests/golden/cases.txt and compares its normalised output with
# tests/golden/out/NAME.txt; with MESHPLAN_GOLDEN_UPDATE=1 it writes that file instead.
# usage: run.sh MESHPLAN NAME
# Normalisation: the repository root is written '@', every decimal number is printed with 6
# significant digits (perl's %.6g), and the exit status is appended as a last line.
set -u
meshplan=$1; name=$2
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
line=$(awk -F'\t' -v n="$name" '$1 == n { print $2; exit }' "$here/cases.txt")
[ -n "$line" ] || { echo "run.sh: no case '$name' in $here/cases.txt"; exit 2; }
read -r -a args <<<"$line"
for i in "${!args[@]}"; do args[$i]=${args[$i]/#@/$root}; done
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
(cd "$work" && "$meshplan" "${args[@]}" >"$work/raw" 2>&1 </dev/null); rc=$?
{ ROOT=$root perl -pe 's/\Q$ENV{ROOT}\E/@/g; s/(?<![\w.])(-?\d+\.\d+(?:[eE][-+]?\d+)?)(?![\w.])/sprintf("%.6g", $1)/ge' "$work/raw"
  echo "exit status: $rc"; } >"$work/got"
want="$here/out/$name.txt"
if [ "${MESHPLAN_GOLDEN_UPDATE:-0}" = 1 ]; then mkdir -p "$here/out"; cp "$work/got" "$want"; exit 0; fi
[ -f "$want" ] || { echo "no golden file $want (tools/golden-update writes it)"; exit 1; }
if ! cmp -s "$work/got" "$want"; then
  echo "golden $name differs from tests/golden/out/$name.txt (command: meshplan $line)"
  diff -u "$want" "$work/got" | head -60
  exit 1
fi
