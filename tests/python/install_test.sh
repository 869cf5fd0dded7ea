#!/usr/bin/env bash
# python.install: `cmake --install BUILD --component python` (what tools/build runs) into a
# temporary DESTDIR, then the README's Python line run from / against each installed copy:
# the package lands in every site-packages folder of MESHPLAN_PYTHON_SITES (';'-separated) and
# imports from there, not from the build tree. Usage: install_test.sh CMAKE BUILD PYTHON SITES
# (PYTHON: the interpreter the module is built for, used for the first folder; python3 on PATH
# for the others, as CMakeLists.txt chose them).
set -u
cmake=$1 build=$2 python=$3 sites=$4
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
DESTDIR=$d "$cmake" --install "$build" --component python >"$d.log" 2>&1 || { cat "$d.log"; rm -f "$d.log"; exit 1; }
rm -f "$d.log"
IFS=';' read -ra list <<<"$sites"
[ "${#list[@]}" -ge 1 ] || { echo "no site-packages folder configured"; exit 1; }
i=0
for site in "${list[@]}"; do
  py=$python; [ $i -gt 0 ] && py=python3
  i=$((i + 1))
  pkg=$d$site/meshplan
  [ -f "$pkg/__init__.py" ] && compgen -G "$pkg/_meshplan*.so" >/dev/null || { echo "not installed in $pkg:"; ls -R "$d"; exit 1; }
  # -s: no user site; from /: neither the source nor the build tree is on the path.
  out=$(cd / && PYTHONPATH=$d$site "$py" -s -c "
import sys, meshplan
assert meshplan.__file__.startswith(sys.argv[1]), meshplan.__file__
r = meshplan.plan(model='llama3.1-70b', system='dgx-h100', gpus=32, seq_len=8192, global_batch=512)['recipes'][0]
l = r['layout']
assert l['tp_size'] * l['pp_size'] * l['cp_size'] * l['dp_size'] == 32 and r['memory_gib']['total'] <= r['memory_gib']['capacity']
print(meshplan.__file__, l['strategy'], l['dp_size'])" "$pkg" 2>&1) || { echo "$py, $site: $out"; exit 1; }
  echo "$py: $out"
done
