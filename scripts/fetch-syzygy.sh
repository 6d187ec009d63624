#!/usr/bin/env bash
# Fetches the 3- and 4-man Syzygy tables (WDL and DTZ, 73 files, 4.4 MB)
# that the python-chess 1.11.2 source distribution ships for its own
# tests, from PyPI, into DEST (default tests/data/syzygy, git-ignored).
#   scripts/fetch-syzygy.sh [DEST]
set -euo pipefail
dest=${1:-tests/data/syzygy}
sha256=a8b43e5678fdb3000695bdaa573117ad683761e5ca38e591c4826eba6d25bb39
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download --quiet --no-deps --no-binary :all: chess==1.11.2 -d "$work"
tarball=$work/chess-1.11.2.tar.gz
echo "$sha256  $tarball" | sha256sum --check --quiet
mkdir -p "$dest"
tar -xzf "$tarball" -C "$work" chess-1.11.2/data/syzygy/regular
cp "$work"/chess-1.11.2/data/syzygy/regular/*.rtb[wz] "$dest"/
echo "$(ls "$dest" | wc -l) table files in $dest"
