#!/usr/bin/env bash
# kaissa under a real systemd: a Debian 12 root (debootstrap) booted with
# systemd-nspawn, the service installed by the README's steps run
# verbatim (the sh block after the "systemd-test: install" marker in
# README.md), the daemon talking to the fake Lichess server
# (examples/fake_lichess.rs) on the host's 127.0.0.1 (nspawn shares the
# host network). Checks: the unit starts and plays a game (and `kaissa
# ctl status` sees it through the control socket); the same from the
# Debian package (`cargo deb`, installed with dpkg; needs cargo-deb); `systemctl
# stop` lets a running game finish and exits 0; `systemctl restart`
# mid-game hands the game over to the new run, which finishes it; a crash
# mid-game is restarted by systemd and the game resumed; a rejected token
# and a bad configuration fail with their exit status and no restart loop.
#
# Needs root, debootstrap, systemd-nspawn (systemd-container), nsenter and
# a Rust toolchain; the first run downloads Debian (~90 MB) from
# $DEBIAN_MIRROR. Usage:
#   sudo scripts/systemd-test.sh
# Environment:
#   KAISSA_DEBROOT  cached pristine root (default /var/tmp/kaissa-debroot;
#                   delete it to rebuild)
#   KAISSA_RUNROOT  the booted copy, rebuilt every run
#                   (default /var/tmp/kaissa-debroot-run)
#   DEBIAN_MIRROR   default http://deb.debian.org/debian
#   KAISSA_BUILT    a directory where kaissa and examples/fake_lichess
#                   are built already (the cargo test sets it: cargo holds
#                   the build lock); unset: built here with --release
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
base=${KAISSA_DEBROOT:-/var/tmp/kaissa-debroot}
root=${KAISSA_RUNROOT:-/var/tmp/kaissa-debroot-run}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
work=$(mktemp -d /tmp/kaissa-systemd-test.XXXXXX)
nspawn_pid=
init=
fake_pid=
failures=0

say() { printf '%s\n' "$*"; }
step() { printf '\n== %s\n' "$*"; }
pass() { say "PASS: $*"; }
fail() {
    say "FAIL: $*"
    failures=$((failures + 1))
}
die() {
    say "FATAL: $*"
    journal
    exit 1
}

# A command inside the container, with a clean environment.
in_ct() {
    nsenter -t "$init" -a env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 "$@"
}
show() { in_ct systemctl show -p "$2" --value "$1"; }
# The main process's peak and current RSS and its threads (read from
# /proc: this host may not delegate the memory controller to the
# container, leaving MemoryCurrent unset).
usage() {
    local pid
    pid=$(show kaissa MainPID)
    in_ct awk -v tasks="$(in_ct ls "/proc/$pid/task" | wc -l)" \
        '/^VmHWM|^VmRSS/ {printf "%s %d MiB, ", $1, $2 / 1024} END {print "threads " tasks}' "/proc/$pid/status"
}
journal() {
    [[ -n $init ]] || return 0
    say "--- journalctl -u kaissa (last 40 lines)"
    in_ct journalctl -u kaissa --no-pager -n 40 -o short-precise || true
}

cleanup() {
    set +e
    if [[ -n $init ]]; then
        in_ct systemctl poweroff >/dev/null 2>&1
    fi
    if [[ -n $nspawn_pid ]]; then
        for _ in $(seq 50); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.2; done
        kill "$nspawn_pid" 2>/dev/null
        wait "$nspawn_pid" 2>/dev/null
    fi
    [[ -n $fake_pid ]] && kill "$fake_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

[[ $(id -u) -eq 0 ]] || die "run as root (debootstrap and systemd-nspawn need it)"
for tool in debootstrap systemd-nspawn nsenter cargo; do
    command -v "$tool" >/dev/null || die "$tool not found (apt-get install debootstrap systemd-container)"
done

step "Debian root ($base)"
if [[ -x $base/lib/systemd/systemd ]]; then
    say "cached"
else
    rm -rf "$base.tmp"
    debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus bookworm "$base.tmp" "$mirror" \
        >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log"; die "debootstrap failed"; }
    mv "$base.tmp" "$base"
    say "built"
fi
rm -rf "$root"
cp -a --reflink=auto "$base" "$root"

step "Build (as a user would, on the host)"
built=${KAISSA_BUILT:-$repo/target/release}
bin=$built/kaissa
fake_bin=$built/examples/fake_lichess
if [[ -n ${KAISSA_BUILT:-} ]]; then
    say "built by the caller (KAISSA_BUILT=$built)"
else
    (cd "$repo" && cargo build --release --bin kaissa --example fake_lichess 2>&1 | tail -1)
fi
[[ -x $bin && -x $fake_bin ]] || die "no $bin or $fake_bin"

step "Fake Lichess on 127.0.0.1"
coproc FAKE { exec "$fake_bin"; }
fake_pid=$FAKE_PID
read -r -t 30 url token <&"${FAKE[0]}" || die "the fake server did not start"
say "$url"
fake() {
    local reply
    printf '%s\n' "$*" >&"${FAKE[1]}"
    read -r -t 900 reply <&"${FAKE[0]}" || die "no answer from the fake server to: $*"
    printf '%s\n' "$reply"
}

step "The checkout in the container (/root/kaissa) and the user's config edits"
co=$root/root/kaissa
mkdir -p "$co/target/release"
cp -a "$repo/config" "$repo/systemd" "$repo/README.md" "$co/"
cp -a "$bin" "$co/target/release/kaissa"
# What the README asks to edit (state_dir, pgn_dir), the server, and a
# node limit so that the test games go quickly.
sed -i -e "s|^url = .*|url = \"$url\"|" \
    -e 's|^# state_dir = "/var/lib/kaissa"|state_dir = "/var/lib/kaissa"|' \
    -e 's|^# pgn_dir = "/var/lib/kaissa/pgn"|pgn_dir = "/var/lib/kaissa/pgn"|' \
    -e 's|^max_nodes = 0|max_nodes = 20000|' \
    "$co/config/kaissa.toml"
diff -u "$repo/config/kaissa.toml" "$co/config/kaissa.toml" | grep '^[-+][^-+]' || true

step "Boot: systemd-nspawn --register=no --keep-unit --boot -D $root"
systemd-nspawn --register=no --keep-unit --boot -D "$root" </dev/null >"$work/console.log" 2>&1 &
nspawn_pid=$!
for _ in $(seq 100); do
    # nspawn's child execs systemd (an intermediate child comes first).
    init=$(pgrep -P "$nspawn_pid" -x systemd || true)
    [[ -n $init ]] && break
    sleep 0.2
done
[[ -n $init ]] || { cat "$work/console.log"; die "the container did not boot"; }
# Until the container's systemd answers on its bus and has booted.
state=
for _ in $(seq 120); do
    state=$(in_ct systemctl is-system-running 2>/dev/null || true)
    [[ $state == running || $state == degraded ]] && break
    sleep 0.5
done
[[ $state == running || $state == degraded ]] || { tail -20 "$work/console.log"; die "the container's systemd is '$state'"; }
say "container init pid $init, system $state"

step "README install steps, verbatim (as root, in the checkout)"
# The sh block after the README's marker `<!-- systemd-test: NAME`.
readme_block() {
    awk -v marker="<!-- systemd-test: $1" 'index($0, marker) == 1 {f=1; next}
             f && /^```sh/ {b=1; next}
             b && /^```/ {exit}
             b {print}' "$repo/README.md"
}
block=$(readme_block install)
[[ -n $block ]] || die "no install block in README.md"
say "$block" | sed 's/^/    /'
token_line=$(grep -F '/etc/kaissa/token' <<<"$block")
# The token is typed at the prompt: here, on stdin.
in_ct bash -euo pipefail -c "cd /root/kaissa && $block" <<<"$token" || die "the install steps failed"

step "1. The unit is active and plays a game"
[[ $(show kaissa ActiveState) == active ]] && pass "kaissa.service active after enable --now" ||
    fail "kaissa.service is $(show kaissa ActiveState)"
say "$(fake wait-stream 30)"
first=$(in_ct journalctl -u kaissa -o cat --no-pager | grep -m1 'logged in' || true)
say "journal line: $first"
if [[ $first =~ ^[0-9]{4}- ]]; then fail "a second timestamp in the journal"; else pass "no timestamp of kaissa's own in the journal"; fi
id=$(fake challenge 60 0 50)
say "challenge $id (1+0): $(fake wait-plies "$id" 10 60)"
ctl=$(in_ct kaissa ctl status 2>&1 || true)
say "kaissa ctl status (as root, in the container):"
say "$ctl" | sed 's/^/    /'
[[ $ctl == *"$id vs "* ]] && pass "kaissa ctl status shows the game through /run/kaissa/control.sock" ||
    fail "kaissa ctl status: $ctl"
say "during the game: $(usage)"
over=$(fake wait-over "$id" 180)
say "game $id: $over"
[[ $over == "over "* && $over != *status=outoftime* && $over == *illegal=0* ]] && pass "game played to its end" ||
    fail "game $id: $over"
# The PGN is written once the game task has seen the end.
for _ in $(seq 50); do in_ct test -s "/var/lib/kaissa/pgn/$id.pgn" && break; sleep 0.2; done
in_ct test -s "/var/lib/kaissa/pgn/$id.pgn" && pass "PGN written to /var/lib/kaissa/pgn/$id.pgn" ||
    fail "no PGN for $id"
say "memory and threads: $(usage)"

step "2. systemctl stop mid-game: the game finishes, exit 0"
id=$(fake challenge 120 0 300)
say "challenge $id (2+0): $(fake wait-plies "$id" 6 60)"
in_ct systemctl stop kaissa &
stop_pid=$!
sleep 2
say "while stopping: $(show kaissa ActiveState) ($(show kaissa StatusText))"
over=$(fake wait-over "$id" 300)
say "game $id: $over"
wait "$stop_pid" || fail "systemctl stop failed"
result="$(show kaissa ActiveState) $(show kaissa Result) status=$(show kaissa ExecMainStatus)"
say "unit: $result"
[[ $over != *status=outoftime* && $over != *status=aborted* && $over == *illegal=0* ]] &&
    pass "the game went on to its end after SIGTERM" || fail "game $id: $over"
[[ $result == "inactive success status=0" ]] && pass "stopped cleanly, exit 0" || fail "stop: $result"

step "3. systemctl restart mid-game: the game is handed over, the new run finishes it"
in_ct systemctl start kaissa
say "$(fake wait-stream 30)"
pid_before=$(show kaissa MainPID)
# A slow opponent (2 s a move): the game cannot end during the restart.
id=$(fake challenge 300 0 2000)
# 6 plies: the bot has moved 3 times.
say "challenge $id (5+0): $(fake wait-plies "$id" 6 60)"
started=$(date +%s)
in_ct systemctl restart kaissa
took=$(($(date +%s) - started))
during=$(fake game "$id")
pid_after=$(show kaissa MainPID)
say "restart returned after ${took} s; game $id then: $during"
[[ $during == *status=started* && $(show kaissa ActiveState) == active && $pid_after != "$pid_before" ]] &&
    pass "restart did not wait for the game (pid $pid_before -> $pid_after, ${took} s)" ||
    fail "restart: game $during, unit $(show kaissa ActiveState)"
over=$(fake wait-over "$id" 300)
say "game $id: $over"
[[ $over != *status=outoftime* && $over != *status=aborted* && $over == *illegal=0* && $over != *streams=1 ]] &&
    pass "the new run resumed the game on a new stream and finished it" ||
    fail "restart resume: game $over"
in_ct journalctl -u kaissa -o cat --no-pager |
    grep -E 'systemd is restarting|systemctl|shutting down|handed over|resum|hash table|Stopping|Started' | tail -12 | sed 's/^/    /'

step "4. A crash mid-game: systemd restarts kaissa, the game is resumed"
say "$(fake wait-stream 30)"
restarts_before=$(show kaissa NRestarts)
id=$(fake challenge 180 0 300)
# 10 plies: the bot has moved 5 times, its hash file is saved (every 4).
say "challenge $id (3+0): $(fake wait-plies "$id" 10 60)"
say "hash files: $(in_ct ls /var/lib/kaissa/hash)"
in_ct systemctl kill -s KILL kaissa
sleep 1
say "after SIGKILL: $(show kaissa ActiveState)/$(show kaissa SubState)"
over=$(fake wait-over "$id" 300)
say "game $id: $over"
say "memory and threads: $(usage)"
restarts=$(show kaissa NRestarts)
[[ $restarts -eq $((restarts_before + 1)) && $over != *status=outoftime* && $over == *illegal=0* && $over != *streams=1 ]] &&
    pass "restarted once by systemd (NRestarts $restarts), game resumed on a new stream and finished" ||
    fail "crash restart: NRestarts $restarts_before -> $restarts, game $over"
in_ct journalctl -u kaissa -o cat --no-pager | grep -E 'resum|hash|Main process exited|Scheduled restart' | tail -6 | sed 's/^/    /'

# Starts the unit, expecting it to fail with exit status $1 and stay
# failed (no restart loop); $2 names the case.
expect_fatal() {
    in_ct systemctl start kaissa && fail "start succeeded with a $2" || true
    sleep 8
    local result
    result="$(show kaissa ActiveState) $(show kaissa Result) status=$(show kaissa ExecMainStatus) restarts=$(show kaissa NRestarts)"
    say "unit: $result"
    in_ct journalctl -u kaissa -o cat --no-pager | grep 'error:' | tail -1 | sed 's/^/    /'
    [[ $result == "failed exit-code status=$1 restarts=0" ]] && pass "failed with status $1, not restarted" ||
        fail "$2: $result"
}

step "5. A rejected token: exit status 77, no restart loop"
in_ct systemctl stop kaissa
in_ct bash -euo pipefail -c "cd /root/kaissa && $token_line" <<<"lip_not_the_right_token"
expect_fatal 77 "rejected token"

step "6. A bad configuration: exit status 78, no restart loop"
in_ct bash -euo pipefail -c "cd /root/kaissa && $token_line" <<<"$token"
sed -i 's/^concurrency = 1/concurrency = 0/' "$root/etc/kaissa/kaissa.toml"
in_ct systemctl reset-failed kaissa
expect_fatal 78 "bad configuration"

step "7. The token encrypted with systemd-creds (README steps, verbatim)"
sed -i 's/^concurrency = 0/concurrency = 1/' "$root/etc/kaissa/kaissa.toml"
in_ct systemctl reset-failed kaissa
encrypted=$(readme_block encrypted)
[[ -n $encrypted ]] || die "no encrypted-token block in README.md"
say "$encrypted" | sed 's/^/    /'
in_ct bash -euo pipefail -c "cd /root/kaissa && $encrypted" <<<"$token" || fail "the encrypted-token steps failed"
say "$(fake wait-stream 30)"
in_ct test ! -e /etc/kaissa/token && ! in_ct grep -qF "$token" /etc/kaissa/token.cred && [[ $(show kaissa ActiveState) == active ]] &&
    pass "active with the token only in /etc/kaissa/token.cred" || fail "encrypted token: $(show kaissa ActiveState)"
id=$(fake challenge 60 0 50)
over=$(fake wait-over "$id" 180)
say "game $id: $over"
[[ $over == "over "* && $over != *status=outoftime* && $over == *illegal=0* ]] && pass "game played to its end" ||
    fail "game $id: $over"

step "8. The Debian package (cargo deb) installed with dpkg: the same checks"
deb=$(ls "$repo"/target/debian/kaissa_*.deb 2>/dev/null | head -1 || true)
if [[ -z $deb || $deb -ot $bin ]]; then
    command -v cargo-deb >/dev/null || die "cargo-deb not found (cargo install cargo-deb)"
    (cd "$repo" && cargo deb --no-build 2>&1 | tail -1)
    deb=$(ls "$repo"/target/debian/kaissa_*.deb | head -1)
fi
say "$(basename "$deb")"
in_ct systemctl disable --now kaissa >/dev/null 2>&1 || true
in_ct rm -rf /usr/local/bin/kaissa /etc/systemd/system/kaissa.service /etc/systemd/system/kaissa.service.d /etc/kaissa
in_ct systemctl daemon-reload
cp "$deb" "$root/root/kaissa.deb"
in_ct dpkg -i /root/kaissa.deb >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i failed"; }
in_ct test -x /usr/bin/kaissa && in_ct test -f /lib/systemd/system/kaissa.service &&
    in_ct test -f /usr/share/man/man1/kaissa.1.gz && pass "binary, unit and man page installed" ||
    fail "the package's files are missing"
[[ $(in_ct stat -c %a /etc/kaissa) == 700 && $(in_ct stat -c %a /etc/kaissa/kaissa.toml) == 600 ]] &&
    pass "/etc/kaissa is root's alone" || fail "/etc/kaissa: $(in_ct stat -c %a /etc/kaissa)"
in_ct dpkg-query -W -f='${Conffiles}' kaissa | grep -q /etc/kaissa/kaissa.toml &&
    pass "/etc/kaissa/kaissa.toml is a conffile" || fail "no conffile"
# The user's edits, as above; the token; enable.
in_ct sed -i -e "s|^url = .*|url = \"$url\"|" \
    -e 's|^# state_dir = "/var/lib/kaissa"|state_dir = "/var/lib/kaissa"|' \
    -e 's|^# pgn_dir = "/var/lib/kaissa/pgn"|pgn_dir = "/var/lib/kaissa/pgn"|' \
    -e 's|^max_nodes = 0|max_nodes = 20000|' /etc/kaissa/kaissa.toml
in_ct bash -euo pipefail -c "printf '%s\n' \"\$(cat)\" | install -m 0600 /dev/stdin /etc/kaissa/token" <<<"$token"
in_ct systemctl enable --now kaissa >/dev/null 2>&1 || fail "systemctl enable --now kaissa failed"
say "$(fake wait-stream 30)"
[[ $(show kaissa ActiveState) == active ]] && pass "the packaged unit runs /usr/bin/kaissa" ||
    fail "kaissa.service is $(show kaissa ActiveState)"
id=$(fake challenge 60 0 50)
say "challenge $id (1+0): $(fake wait-plies "$id" 6 60)"
ctl=$(in_ct kaissa ctl status 2>&1 || true)
[[ $ctl == *"$id vs "* ]] && pass "kaissa ctl status shows the game" || fail "kaissa ctl status: $ctl"
over=$(fake wait-over "$id" 180)
say "game $id: $over"
[[ $over == "over "* && $over != *status=outoftime* && $over == *illegal=0* ]] && pass "game played to its end" ||
    fail "game $id: $over"

step "Result"
if [[ $failures -eq 0 ]]; then
    say "all checks passed"
else
    journal
    say "$failures check(s) failed"
    exit 1
fi
