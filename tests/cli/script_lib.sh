# Sourced by the CLI script tests (sweep_out.sh, launch_force.sh) with the meshplan binary as
# their $1: sets mp, dir (a temporary folder, removed on exit) and fail; `check CONDITION`
# prints a false condition and marks the run failed; `finish` prints the last $dir/log of a
# failed run and exits with the verdict.
set -u
mp=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if ! eval "$1"; then echo "FAILED: $1"; fail=1; fi; }
finish() {
  [ "$fail" = 0 ] || { echo "---- last log:"; cat "$dir/log"; }
  exit "$fail"
}
