#!/usr/bin/env bash
# browser.page: starts `meshplan serve` on a free port and drives the page in headless
# Chromium (page_test.js). Usage: run.sh MESHPLAN DIR, DIR holding node_modules/playwright-core
# (.ci/run installs it); the screenshot is written to DIR/serve-page.png. Exit 77 (skipped)
# without chromium, node or playwright-core.
set -uo pipefail
bin=$1 dir=$2
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || { echo "chromium not installed: skipped"; exit 77; }
command -v node >/dev/null || { echo "node not installed: skipped"; exit 77; }
[ -d "$dir/node_modules/playwright-core" ] || { echo "playwright-core not in $dir/node_modules (.ci/run installs it): skipped"; exit 77; }
log=$(mktemp)
"$bin" serve --port 0 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$log"' EXIT
url=""
for _ in $(seq 1 100); do
  url=$(grep -o 'http://[^ ]*' "$log" | head -1)
  [ -n "$url" ] && break
  kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "meshplan serve printed no address"; cat "$log"; exit 1; }
NODE_PATH="$dir/node_modules" CHROMIUM="$chromium" URL="$url" OUT="$dir" node "$(dirname "$0")/page_test.js"
