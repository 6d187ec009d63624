#!/usr/bin/env bash
# Builds Fairy-Stockfish (the variant engine; its `id name` version is
# the build date, ddmmyy) from the C++ sources that the pyffish 0.0.90
# source distribution on PyPI carries, into
# DEST (default tests/data/engines/fairy-stockfish, git-ignored).
#   scripts/build-fairy-stockfish.sh [DEST]
# Why not Debian's: its fairy-stockfish (11.1) plays every Lichess variant
# but atomic; this one plays all eight. Needs g++ and about a minute of
# two cores. Skipped when DEST already answers `uci` with a UCI_Variant
# list that has atomic.
set -euo pipefail
dest=${1:-tests/data/engines/fairy-stockfish}
if [ -x "$dest" ] && printf 'uci\nquit\n' | "$dest" 2>/dev/null | grep -q ' var atomic '; then
  echo "$dest is built"
  exit 0
fi
sha256=4a79601d85f392bce03705a275fb5f03dc44a554b26d32d518fb6887d772f701
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download --quiet --no-deps --no-binary :all: pyffish==0.0.90 -d "$work"
tarball=$work/pyffish-0.0.90.tar.gz
echo "$sha256  $tarball" | sha256sum --check --quiet
tar -xzf "$tarball" -C "$work"
src=$work/pyffish-0.0.90/src
mkdir -p "$(dirname "$dest")"
# The engine's own sources less the two language bindings; no embedded
# net (the classical evaluation plays, which is all the tests need).
g++ -O2 -w -std=c++17 -DNDEBUG -DIS_64BIT -DUSE_PTHREADS -DNNUE_EMBEDDING_OFF \
  $(ls "$src"/*.cpp "$src"/syzygy/*.cpp "$src"/nnue/*.cpp "$src"/nnue/features/*.cpp |
    grep -v -e /pyffish.cpp -e /ffishjs.cpp) \
  -o "$dest" -lpthread
printf 'uci\nquit\n' | "$dest" | grep -m1 '^id name'
