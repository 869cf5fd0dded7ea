#!/usr/bin/env bash
# Runs a command and checks its exit status and output.
# usage: expect.sh EXIT_CODE 'regex that stdout+stderr must match' [!'regex that must not match'] -- command args...
set -u
want_rc=$1; shift
must=(); mustnot=()
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    '!'*) mustnot+=("${1#!}") ;;
    *) must+=("$1") ;;
  esac
  shift
done
shift
out=$("$@" 2>&1 </dev/null); rc=$?
fail=0
if [ "$rc" != "$want_rc" ]; then echo "expected exit status $want_rc, got $rc"; fail=1; fi
for re in "${must[@]}"; do
  if ! grep -Eq -- "$re" <<<"$out"; then echo "output lacks: $re"; fail=1; fi
done
for re in "${mustnot[@]}"; do
  if grep -Eq -- "$re" <<<"$out"; then echo "output must not contain: $re"; fail=1; fi
done
if [ "$fail" != 0 ]; then echo "---- command: $*"; echo "---- output:"; printf '%s\n' "$out" | head -80; exit 1; fi
exit 0
