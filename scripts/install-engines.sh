#!/usr/bin/env bash
# Install the Debian reference engines used for kaissa's test matches, plus
# python-chess (PyPI package "chess") for scripts/match.py.
#
# Idempotent: apt-get only installs what is missing, pip only upgrades when
# the installed version is too old. Needs root (or sudo) for apt-get.
#
# Usage: scripts/install-engines.sh [--no-apt] [--no-pip]
set -euo pipefail

ENGINES=(stockfish ethereal-chess toga2 glaurung gnuchess gnuchess-book
         fairymax phalanx sjeng hoichess)
PY_CHESS_SPEC='chess>=1.10'

do_apt=1
do_pip=1
for a in "$@"; do
    case "$a" in
        --no-apt) do_apt=0 ;;
        --no-pip) do_pip=0 ;;
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        *) echo "unknown argument: $a" >&2; exit 2 ;;
    esac
done

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=(sudo); else
        echo "not root and no sudo: cannot run apt-get" >&2; exit 1
    fi
fi

if [ "$do_apt" = 1 ]; then
    missing=()
    for p in "${ENGINES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$p")
        fi
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "installing: ${missing[*]}"
        "${SUDO[@]}" apt-get update
        DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
    else
        echo "all engine packages already installed"
    fi
fi

if [ "$do_pip" = 1 ]; then
    PY=${PYTHON:-python3}
    if "$PY" - <<'PYEOF' 2>/dev/null
import chess, sys
v = tuple(int(x) for x in chess.__version__.split(".")[:2])
sys.exit(0 if v >= (1, 10) else 1)
PYEOF
    then
        echo "python-chess $("$PY" -c 'import chess; print(chess.__version__)') already installed"
    else
        # Debian's system python is "externally managed" (PEP 668); fall back
        # to --break-system-packages only when plain pip refuses.
        "$PY" -m pip install --user "$PY_CHESS_SPEC" 2>/dev/null \
          || "$PY" -m pip install "$PY_CHESS_SPEC" \
          || "$PY" -m pip install --break-system-packages "$PY_CHESS_SPEC"
    fi
fi

echo
echo "engine binaries:"
for b in stockfish ethereal-chess toga2 glaurung gnuchess fairymax phalanx sjeng hoichess; do
    printf '  %-10s %s\n' "$b" "$(command -v "$b" 2>/dev/null || ls /usr/games/$b 2>/dev/null || echo MISSING)"
done
