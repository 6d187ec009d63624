#!/usr/bin/env bash
# The status page (`[web]`) in a real browser: the fake Lichess server
# (examples/fake_lichess.rs) and kaissa with the web server on, two live
# games (standard chess with the built-in engine, crazyhouse with
# Fairy-Stockfish), and headless Chromium's screenshots of the page at a
# desktop's and a phone's width. For the closing notes; CI does not run
# it. What the page costs the games is measured by the load benchmark
# with KAISSA_E2E_WEB_POLL=1 (README, "Sizing"). Needs chromium (Debian:
# apt-get install chromium) and the Fairy-Stockfish of tests/data/engines
# (or KAISSA_FAIRY_STOCKFISH).
#   scripts/web-screenshot.sh [OUT_DIR]     (default /tmp/kaissa-web)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-/tmp/kaissa-web}
fairy=${KAISSA_FAIRY_STOCKFISH:-$repo/tests/data/engines/fairy-stockfish}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[[ -n $browser ]] || { echo "chromium not found: apt-get install chromium"; exit 1; }
[[ -x $fairy ]] || { echo "no Fairy-Stockfish at $fairy"; exit 1; }
mkdir -p "$out"
work=$(mktemp -d /tmp/kaissa-web.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

(cd "$repo" && cargo build --release --quiet --bin kaissa --example fake_lichess)
coproc FAKE { "$repo/target/release/examples/fake_lichess"; }
read -r url token <&"${FAKE[0]}"
fake() {
    local reply
    printf '%s\n' "$*" >&"${FAKE[1]}"
    read -r -t 120 reply <&"${FAKE[0]}"
    printf '%s\n' "$reply"
}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/kaissa.toml" <<TOML
[lichess]
url = "$url"
[engine]
hash_mb = 16
[bot]
concurrency = 2
[challenge]
variants = ["standard", "crazyhouse"]
max_games_per_opponent = 2
[engines.fairy]
command = "$fairy"
variants = ["crazyhouse"]
[web]
enabled = true
listen = "127.0.0.1:$port"
TOML
LICHESS_BOT_TOKEN=$token "$repo/target/release/kaissa" run --config "$work/kaissa.toml" >"$work/kaissa.log" 2>&1 &
fake wait-stream 30 >/dev/null
std=$(fake challenge 600 5 1500)
zh=$(fake challenge 600 5 1500 crazyhouse)
fake wait-plies "$std" 12 120 >/dev/null
fake wait-plies "$zh" 12 120 >/dev/null
for size in desktop:1280,1000 phone:390,2200; do
    name=${size%%:*}
    "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --window-size="${size#*:}" --virtual-time-budget=4000 \
        --screenshot="$out/status-$name.png" "http://127.0.0.1:$port/" 2>/dev/null
    echo "$out/status-$name.png"
done
