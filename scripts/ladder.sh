#!/usr/bin/env bash
# Run scripts/match.py against a list of opponents in turn and print a table.
#
# Usage: scripts/ladder.sh [-l LIST] [-o OUTDIR] [-e "ENGINE1 CMD"] [-p uci|xboard]
#                          [-O NAME=VALUE]... [-n NAME,NAME...] [-- MATCH.PY ARGS...]
#   -l LIST    opponent list (default scripts/engines.txt):
#              "name | uci|xboard | command line | OPT=V,OPT=V" per line
#   -o OUTDIR  where the per-opponent PGN, JSON and log go
#              (default target/ladder/<date>/ in the repository, git-ignored)
#   -e CMD     engine under test (default: match.py's, target/release/kaissa uci)
#   -p PROTO   its protocol (default uci)
#   -O OPT     an option for the engine under test (repeatable)
#   -n NAMES   only these opponents (comma-separated names from the list)
#   everything after -- goes to match.py, e.g. -- --tc 10+0.1 --games 20 --concurrency 2
#
# Example:
#   scripts/ladder.sh -n fairymax,phalanx,sf-1350 -- --tc 10+0.1 --games 20
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
list="$here/engines.txt"
outdir="$(dirname "$here")/target/ladder/$(date +%Y%m%d-%H%M%S)"
engine1=""
proto1="uci"
only=""
opts1=()
while [ $# -gt 0 ]; do
    case "$1" in
        -l) list=$2; shift 2 ;;
        -o) outdir=$2; shift 2 ;;
        -e) engine1=$2; shift 2 ;;
        -p) proto1=$2; shift 2 ;;
        -O) opts1+=(--option1 "$2"); shift 2 ;;
        -n) only=",$2,"; shift 2 ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        --) shift; break ;;
        *) echo "unknown argument: $1 (match.py arguments go after --)" >&2; exit 2 ;;
    esac
done
extra=("$@")
[ -f "$list" ] || { echo "no opponent list $list" >&2; exit 2; }
mkdir -p "$outdir"

e1=()
[ -n "$engine1" ] && e1=(--engine1 "$engine1")
trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; s=${s%"${s##*[![:space:]]}"}; printf '%s' "$s"; }

ran=()
while IFS='|' read -r name proto cmd opts || [ -n "$name" ]; do
    name=$(trim "$name")
    case "$name" in ''|'#'*) continue ;; esac
    [ -n "$only" ] && [[ "$only" != *",$name,"* ]] && continue
    proto=$(trim "$proto"); cmd=$(trim "$cmd"); opts=$(trim "${opts:-}")
    o2=()
    if [ -n "$opts" ]; then
        IFS=',' read -r -a arr <<<"$opts"
        for o in "${arr[@]}"; do o=$(trim "$o"); [ -n "$o" ] && o2+=(--option2 "$o"); done
    fi
    echo "##### $name: $cmd ($proto)"
    rc=0
    python3 "$here/match.py" "${e1[@]}" --proto1 "$proto1" "${opts1[@]}" \
        --engine2 "$cmd" --proto2 "$proto" --name2 "$name" "${o2[@]}" \
        --pgn "$outdir/$name.pgn" --json "$outdir/$name.json" "${extra[@]}" \
        2>&1 | tee "$outdir/$name.log" || rc=$?
    [ "$rc" -eq 0 ] || echo "(match against $name failed, exit $rc)"
    ran+=("$name")
done < "$list"

[ "${#ran[@]}" -gt 0 ] || { echo "no opponents selected" >&2; exit 2; }

python3 - "$outdir" "${ran[@]}" <<'PYEOF'
import json, math, os, sys
outdir, names = sys.argv[1], sys.argv[2:]
rows = []
for n in names:
    p = os.path.join(outdir, n + ".json")
    if not os.path.exists(p):
        rows.append((n, None)); continue
    with open(p) as f:
        rows.append((n, json.load(f)))
def elo(s):
    e, err = s.get("elo"), s.get("elo_error95")
    if e is None or (isinstance(e, float) and math.isnan(e)): return "n/a"
    es = f"{e:+.0f}" if math.isfinite(e) else ("+inf" if e > 0 else "-inf")
    return es + (f" +/- {err:.0f}" if err is not None and math.isfinite(err) else " +/- inf")
print()
first = next((s for _, s in rows if s), None)
if first:
    print(f"Ladder for {first['engine1']}  ({first.get('limit', '')})")
hdr = f"{'opponent':<12} {'games':>5} {'W':>4} {'D':>4} {'L':>4} {'score':>7} {'Elo (95%)':>16} {'time A/B':>9} {'fail A/B':>9}"
print(hdr); print("-" * len(hdr))
for n, s in rows:
    if not s:
        print(f"{n:<12} (no result)"); continue
    fa = sum(v for k, v in s["failures"]["A"].items() if k != "time")
    fb = sum(v for k, v in s["failures"]["B"].items() if k != "time")
    sc = f"{100 * s['score']:.1f}%" if s["score"] is not None else "-"
    print(f"{n:<12} {s['games']:>5} {s['wins']:>4} {s['draws']:>4} {s['losses']:>4} {sc:>7} {elo(s):>16} "
          f"{s['time_losses']['A']:>4}/{s['time_losses']['B']:<4} {fa:>4}/{fb:<4}")
PYEOF
echo "PGNs, logs and JSON summaries in $outdir/"
