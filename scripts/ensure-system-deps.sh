#!/usr/bin/env bash
# Installs the Debian packages the tests need when they are missing (idempotent, quiet when
# everything is present). Needs root (or passwordless sudo) the first time on a fresh machine.
set -euo pipefail

# Debian package:command (or package:/absolute/file) that proves it is installed. The engine
# itself needs none (sharp ships libvips); these are the independent tools the tests use.
REQUIRED=(
  unzip:unzip
  zip:zip
  chromium:chromium
  qpdf:qpdf
  libimage-exiftool-perl:exiftool
  clamav:clamscan
  clamav-daemon:/usr/sbin/clamd
  poppler-utils:pdftotext
  printemf:printemf
  libwmf-bin:wmf2svg
  # libwmf only recommends its fonts; without them wmf2svg draws nothing ("failed to load *any* font").
  fonts-urw-base35:/usr/share/fonts/type1/urw-base35
  libreoffice-writer-nogui:soffice
  libreoffice-calc-nogui:/usr/lib/libreoffice/program/libsclo.so
  libreoffice-impress-nogui:/usr/lib/libreoffice/program/libslideshowlo.so
  # The UNO bridge of @disarm/libreoffice's warm pool (the system python3 imports uno).
  python3-uno:/usr/lib/python3/dist-packages/uno.py
  # An independent compound-file reader, to judge rebuilt .doc files.
  python3-olefile:/usr/lib/python3/dist-packages/olefile/olefile.py
  # A real PostgreSQL server for @disarm/postgres's tests (a temporary cluster per test file).
  postgresql-15:/usr/lib/postgresql/15/bin/initdb
  # The README's examples, which the README test runs as written.
  curl:curl
  jq:jq
  openssl:openssl
)

missing=()
for item in "${REQUIRED[@]+"${REQUIRED[@]}"}"; do
  pkg="${item%%:*}"
  probe="${item#*:}"
  # A probe is a command on the PATH, or (starting with /) a file the package installs.
  if [[ "$probe" == /* ]]; then
    [ -e "$probe" ] || missing+=("$pkg")
  elif ! command -v "$probe" >/dev/null 2>&1; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "system packages: all present"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo="sudo -n"
else
  echo "system packages missing: ${missing[*]} — run as root (or with passwordless sudo) once to install them" >&2
  exit 1
fi

echo "installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "installed: ${missing[*]}"
