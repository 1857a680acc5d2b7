#!/bin/sh
# The command lines of every tool: --version answers 0 with the version on
# stdout; a usage error answers 2 with the reason and a usage line on stderr
# (and nothing on stdout), before anything is created; accelfs --sim=NAME
# finds an installed topology by name and refuses an unknown one.
set -eu
fail() { echo "test_cli: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A daemon in the background has no stderr: an ASan/UBSan build reports into files checked at the end.
export ASAN_OPTIONS="log_path=$tmp/sanitizer:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="log_path=$tmp/sanitizer:print_stacktrace=1:${UBSAN_OPTIONS:-}"
version=$("$ACCELFS" --version | sed -n 's/^accelfs \([^ ]*\).*/\1/p')
[ -n "$version" ] || fail "accelfs --version does not start with 'accelfs VERSION'"

# Every program installed (accelfs-slurm-sync when the Slurm plugin is built).
for tool in "$ACCELFS" "$ACCEL_SMI" "$BARSWAP" "$ACCEL_WAIT" "$ACCELFS_HOOK" ${ACCELFS_SLURM_SYNC:-}; do
	name=$(basename "$tool")
	for flag in --version -V; do
		out=$("$tool" "$flag") || fail "$name $flag exited $?"
		case "$out" in "$name $version"*) ;; *) fail "$name $flag says '$out', not '$name $version'" ;; esac
	done
	"$tool" --help >/dev/null || fail "$name --help exited $?"
done

# usage_error EXPECTED_WORDS CMD...: status 2, stdout empty, stderr has the words and a usage line.
usage_error() {
	words=$1
	shift
	set +e
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
	[ "$rc" = 2 ] || fail "$* exited $rc, not 2 (a usage error): $(cat "$tmp/err")"
	[ ! -s "$tmp/out" ] || fail "$* printed on stdout: $(cat "$tmp/out")"
	grep -q "^usage: " "$tmp/err" || fail "$* printed no usage line on stderr: $(cat "$tmp/err")"
	grep -q -- "$words" "$tmp/err" || fail "$* did not say '$words': $(cat "$tmp/err")"
}

mkdir "$tmp/mnt" "$tmp/node"
usage_error "unknown option --bogus" "$ACCELFS" --bogus "$tmp/mnt"
usage_error "no mountpoint" "$ACCELFS"
usage_error "expected seconds" "$ACCELFS" --poll-interval=soon "$tmp/mnt"
usage_error "does not exist" "$ACCELFS" "$tmp/nowhere"
usage_error "no topology named nosuchnode" "$ACCELFS" --sim=nosuchnode --state-dir="$tmp/s1" "$tmp/mnt"
usage_error "cannot read the topology" "$ACCELFS" --sim="$tmp/missing.json" --state-dir="$tmp/s1" "$tmp/mnt"
usage_error "metrics-textfile" "$ACCELFS" --metrics-textfile="$tmp/nowhere" --state-dir="$tmp/s1" "$tmp/mnt"
usage_error "log file cannot be opened" "$ACCELFS" --log="$tmp/nowhere/accelfs.log" --state-dir="$tmp/s1" "$tmp/mnt"
usage_error "Is a directory" "$ACCELFS" --log="$tmp" --state-dir="$tmp/s1" "$tmp/mnt"
[ ! -e "$tmp/s1" ] || fail "a refused accelfs created its state directory"

usage_error "unknown option" "$ACCEL_SMI" --bogus
# No command: nvidia-smi's status table, not a usage error.
out=$("$ACCEL_SMI" --sim="$tmp/node") || fail "accel-smi with no command exited $?"
printf '%s\n' "$out" | grep -q '^PPU  TREE ' || fail "accel-smi with no command printed no status table: $out"
usage_error "-f takes ppu or gpu" "$ACCEL_SMI" -f tpu -L
usage_error "Invalid mig option" "$ACCEL_SMI" --sim="$tmp/node" mig -bogus
usage_error "fault" "$ACCEL_SMI" --sim="$tmp/node" sim fault
usage_error "does not exist" "$ACCEL_SMI" --sim="$tmp/nonode" -L
# --help names every sim command that `sim help` describes in full.
for sub in $("$ACCEL_SMI" --sim="$tmp/node" sim help | sed -n 's/^  \([a-z][a-z-]*\).*/\1/p'); do
	"$ACCEL_SMI" --help | grep -q "^  sim \(.* \)\?$sub\b\|| sim $sub\b" || fail "accel-smi --help does not list sim $sub"
done
# The tools take a bad ACCELFS_LOG with a warning (the daemon refuses it: test_operator.py).
ACCELFS_LOG=bogus "$ACCEL_SMI" --sim="$tmp/node" -L >/dev/null 2>"$tmp/err" || fail "accel-smi -L failed under ACCELFS_LOG=bogus"
grep -q "^accel-smi: warning: ACCELFS_LOG=bogus is not a level" "$tmp/err" || fail "no warning for ACCELFS_LOG=bogus: $(cat "$tmp/err")"
[ ! -e "$tmp/nonode" ] || fail "accel-smi created a state directory it refused"

usage_error "unrecognized option" "$BARSWAP" --bogus query
usage_error "usage" "$BARSWAP"
usage_error "unknown command frobnicate" "$BARSWAP" frobnicate 1
usage_error "info needs 1 argument" "$BARSWAP" info
usage_error "info takes 1 argument: '2' and what follows would not be read" "$BARSWAP" info 1 2
usage_error "acquire takes at most 2 arguments: 'x'" "$BARSWAP" acquire 1 2 x
usage_error "query takes 0 arguments" "$BARSWAP" query 1
usage_error "--json goes with query and info" "$BARSWAP" --json acquire 1
usage_error "milliseconds expected" "$BARSWAP" --timeout=soon query
usage_error "does not exist" "$BARSWAP" --sim="$tmp/nonode" query

usage_error "unexpected argument" "$ACCEL_WAIT" --bogus "$tmp/x"
usage_error "usage" "$ACCEL_WAIT"
usage_error "expected seconds" "$ACCEL_WAIT" --timeout=soon "$tmp/x"

usage_error "usage" "$ACCELFS_HOOK"
usage_error "usage" "$ACCELFS_HOOK" bogus "$tmp" MIG-x
if [ -n "${ACCELFS_SLURM_SYNC:-}" ]; then
	usage_error "unrecognized option" "$ACCELFS_SLURM_SYNC" --bogus
	usage_error "seconds from 0.05" "$ACCELFS_SLURM_SYNC" --interval=soon
	usage_error "unexpected argument" "$ACCELFS_SLURM_SYNC" extra
fi

# --sim=NAME: an installed topology by name.  The build tree's copies are what
# an uninstalled accelfs finds (the DESTDIR test checks the installed ones).
for name in small default nvidia-only thead-quirks; do
	[ -f "$BUILD_ROOT/sim/topologies/$name.json" ] || fail "the build tree has no topology $name"
done
if [ "$(id -u)" = 0 ]; then
	"$ACCELFS" --sim=small --state-dir="$tmp/s2" "$tmp/mnt" || fail "accelfs --sim=small did not mount"
	devices=$(ls "$tmp/mnt" | grep -c '^\(ppu\|gpu\)' || true)
	pid=$(cat "$tmp/s2/accelfs.pid")
	fusermount3 -u "$tmp/mnt"
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	want=$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); print(sum(t[f].get("count", 0) for f in ("thead","nvidia") if f in t))' "$BUILD_ROOT/sim/topologies/small.json" 2>/dev/null || echo "?")
	[ "$devices" = "$want" ] || fail "--sim=small shows $devices devices, small.json has $want"
fi
if ls $tmp/sanitizer* >/dev/null 2>&1; then cat $tmp/sanitizer* >&2; fail "the sanitizers reported errors"; fi
echo "test_cli: --version and usage errors of every tool, --sim by name"
