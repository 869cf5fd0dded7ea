#!/usr/bin/env bash
# Renders `meshplan plan --report` in headless Chromium and checks that the charts are drawn:
# the rendered DOM holds the SVG bars and points, and a screenshot has non-blank pixels.
# Chromium (Debian package `chromium`) is installed here if missing and possible; otherwise
# the test is skipped (exit 77, ctest SKIP_RETURN_CODE) with a message.
# Usage: chromium_render.sh MESHPLAN [SCREENSHOT.png]
set -u
mp=$1
shot_out=${2:-}
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 || true
  chromium=$(command -v chromium || true)
fi
if [ -z "$chromium" ]; then
  echo "SKIP: chromium is not installed and could not be installed (apt-get install -y chromium)"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$mp" plan --model llama3.1-8b --system dgx-h200 --gpus 8 --seq-len 4096 --global-batch 64 --top 5 \
  --report "$dir/report.html" >/dev/null || { echo "meshplan plan --report failed"; exit 1; }
flags=(--headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$dir/profile")
timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$dir/report.html" >"$dir/dom.html" 2>"$dir/err.log"
segs=$(grep -o 'class="seg"' "$dir/dom.html" | wc -l)
pts=$(grep -o 'class="pt"' "$dir/dom.html" | wc -l)
tops=$(grep -o 'class="top"' "$dir/dom.html" | wc -l)
echo "rendered DOM: $segs bar segments, $pts scatter points, $tops recommended points"
if [ "$segs" -lt 10 ] || [ "$pts" -lt 5 ] || [ "$tops" -ne 5 ]; then
  echo "charts missing from the rendered DOM"; tail -5 "$dir/err.log"; exit 1
fi
timeout 120 "$chromium" "${flags[@]}" --hide-scrollbars --window-size=900,1400 \
  --screenshot="$dir/shot.png" "file://$dir/report.html" >/dev/null 2>>"$dir/err.log"
[ -s "$dir/shot.png" ] || { echo "no screenshot"; tail -5 "$dir/err.log"; exit 1; }
# Non-blank: the PNG of a blank white page compresses to a few kB; charts need many colours.
python3 - "$dir/shot.png" <<'PY' || exit 1
import sys, zlib, struct
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w, h = 8, b"", 0, 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8]); body = data[pos + 8:pos + 8 + n]; pos += 12 + n
    if kind == b"IHDR": w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
    if kind == b"IDAT": idat += body
raw = zlib.decompress(idat)
bpp = {2: 3, 6: 4}[ctype]
stride = w * bpp + 1
# Count rows that are not uniform (filter byte 0/1/2.. aside, a uniform row after Sub filter is mostly zeros).
nonwhite = sum(1 for i in range(1, len(raw), 97) if raw[i] not in (0, 255))
print(f"screenshot {w}x{h}, {nonwhite} sampled non-trivial bytes")
sys.exit(0 if nonwhite > 200 else 1)
PY
if [ -n "$shot_out" ]; then cp "$dir/shot.png" "$shot_out"; fi
echo "report rendered"
