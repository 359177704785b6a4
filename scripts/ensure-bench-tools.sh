#!/usr/bin/env bash
# Installs the command-line tools the bench runs as peers (bench/run.ts calls this first):
#   vips (libvips-tools), zip, unzip, GNU time (/usr/bin/time), gunzip (gzip), and ImageMagick
#   (the BMP peer; libvips has no BMP saver), wrk (the load generator of bench/api.ts), and the
#   document peers of bench/pdf-bench.ts and bench/office-bench.ts: qpdf, Ghostscript and mat2.
# Idempotent: silent when everything is present. Installs the missing Debian packages with apt-get
# when run as root; otherwise names them and exits 1, and the bench marks those peers n/a.
set -euo pipefail

missing=()

# ImageMagick is checked by its real binaries, not by `convert` on PATH: a machine may carry a
# stand-in script of that name.
has_imagemagick() {
  command -v magick >/dev/null 2>&1 || [ -x /usr/bin/convert ] || [ -x /usr/bin/convert-im6.q16 ]
}

command -v vips >/dev/null 2>&1 || missing+=(libvips-tools)
command -v zip >/dev/null 2>&1 || missing+=(zip)
command -v unzip >/dev/null 2>&1 || missing+=(unzip)
command -v gunzip >/dev/null 2>&1 || missing+=(gzip)
[ -x /usr/bin/time ] || missing+=(time)
has_imagemagick || missing+=(imagemagick)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v qpdf >/dev/null 2>&1 || missing+=(qpdf)
command -v gs >/dev/null 2>&1 || missing+=(ghostscript)
command -v mat2 >/dev/null 2>&1 || missing+=(mat2)

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-bench-tools: missing ${missing[*]}; not root, so not installing." >&2
  echo "ensure-bench-tools: install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-bench-tools: missing ${missing[*]}, and apt-get is not available here." >&2
  exit 1
fi

echo "ensure-bench-tools: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# apt's progress goes to a log, shown only when the install fails.
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
  >"$log" 2>&1; then
  cat "$log" >&2
  echo "ensure-bench-tools: installing ${missing[*]} failed" >&2
  exit 1
fi
echo "ensure-bench-tools: installed ${missing[*]}" >&2
