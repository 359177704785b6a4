#!/usr/bin/env bash
# Installs the Debian packages disarm needs when they are missing (idempotent, quiet when
# everything is present). Needs root (or passwordless sudo) the first time on a fresh machine.
#
#   scripts/ensure-system-deps.sh            what the service runs and what the tests use
#   scripts/ensure-system-deps.sh --runtime  what the service runs, nothing else (the Docker image)
#
# The lists live in scripts/system-packages/ (runtime.list, test.list), one package a line with
# the command or file that proves it is installed; nothing else names them.
set -euo pipefail

lists_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/system-packages"
case "${1:-}" in
  --runtime) lists=("$lists_dir/runtime.list") ;;
  '') lists=("$lists_dir/runtime.list" "$lists_dir/test.list") ;;
  *)
    echo "usage: $0 [--runtime]" >&2
    exit 2
    ;;
esac

missing=()
for list in "${lists[@]}"; do
  while read -r pkg probe _; do
    [ -z "$pkg" ] || [[ "$pkg" == \#* ]] && continue
    # A probe is a command on the PATH, or (starting with /) a file the package installs.
    if [[ "$probe" == /* ]]; then
      [ -e "$probe" ] || missing+=("$pkg")
    elif ! command -v "$probe" >/dev/null 2>&1; then
      missing+=("$pkg")
    fi
  done <"$list"
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
