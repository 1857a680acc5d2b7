#!/bin/sh
# node.json from a shell script, with jq: it parses, and what a script asks
# of it is what the individual files say (the field-by-field comparison is
# test_service.py's; this is the way an operator's script uses it).
set -eu
fail() { echo "test_jq: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (a FUSE mount with device nodes)"
state=$(mktemp -d)
mnt=$(mktemp -d)
cleanup() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	rm -rf "$state"
	rmdir "$mnt"
}
trap cleanup EXIT
# A daemon in the background has no stderr: an ASan/UBSan build reports into files checked at the end.
export ASAN_OPTIONS="log_path=$state/sanitizer:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="log_path=$state/sanitizer:print_stacktrace=1:${UBSAN_OPTIONS:-}"
"$ACCELFS" --sim --state-dir="$state" --orphan-grace=3600 "$mnt"
mkdir "$mnt/ppu3/mig/4g.48gb/job1" "$mnt/mig/1g.18gb/job2"
"$ACCEL_SMI" --sim="$state" -f ppu -i 5 -mig 0 >/dev/null
# The mode change shows once the poller has read it: wait for it in the file a script would read.
"$ACCEL_WAIT" --until=disabled --timeout=30 "$mnt/ppu5/mig/mode" >/dev/null || fail "ppu5's mode did not follow"
json="$mnt/node.json"

"$JQ" -e . "$json" >/dev/null || fail "node.json does not parse"
[ "$("$JQ" .format "$json")" = 1 ] || fail "node.json's format is not 1"

names=$("$JQ" -r '.devices[].name' "$json" | sort | tr '\n' ' ')
files=$(ls "$mnt" | grep '^\(ppu\|gpu\)' | sort | tr '\n' ' ')
[ "$names" = "$files" ] || fail "node.json's devices ($names) are not the tree's ($files)"

q() { "$JQ" -r "$@" "$json"; }
[ "$(q '.devices[] | select(.name == "ppu3") | .profiles[] | select(.name == "4g.48gb") | .available')" = \
	"$(cat "$mnt/ppu3/mig/4g.48gb/available")" ] || fail "ppu3 4g.48gb available differs"
[ "$(q '.devices[] | select(.name == "ppu5") | .mig_mode')" = disabled ] || fail "ppu5's mode is not disabled"
[ "$(q '.devices[] | select(.name == "ppu5") | .profiles | length')" = 0 ] || fail "ppu5 lists profiles with the mode off"
[ "$(q '[.devices[].jobs[].name] | sort | join(" ")')" = "job1 job2" ] || fail "the jobs are not job1 and job2"
dev=$(q '.devices[] | select(any(.jobs[]; .name == "job2")) | .name')
[ "../../../$dev/mig/1g.18gb/job2" = "$(readlink "$mnt/mig/1g.18gb/job2/device")" ] ||
	fail "job2 is on $dev in node.json, elsewhere in the tree"
[ "$(q '.devices[] | .jobs[] | select(.name == "job1") | .devices | map("\(.path) c \(.major):\(.minor)") | .[]')" = \
	"$(cat "$mnt/ppu3/mig/4g.48gb/job1/devices")" ] || fail "job1's device nodes differ from its devices file"
[ "$(q '.mig.profiles[] | select(.name == "4g.48gb") | .available')" = "$(cat "$mnt/mig/4g.48gb/available")" ] ||
	fail "the node-level 4g.48gb available differs"
[ "$(q '.dies.slot.dies')" = "$(sed -n 's/^dies: //p' "$mnt/dies/slot")" ] || fail "the dies' count differs"
[ -z "$(q '.devices[] | select(.state != "ok") | .name')" ] || fail "a device is not ok"
rmdir "$mnt/ppu3/mig/4g.48gb/job1" "$mnt/mig/1g.18gb/job2"
[ "$(q '[.devices[].jobs[]] | length')" = 0 ] || fail "node.json still shows jobs after rmdir"
# Stop the daemon and wait for it: a sanitizer's leak report is written as it exits.
pid=$(cat "$state/accelfs.pid")
fusermount3 -u "$mnt"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if ls $state/sanitizer* >/dev/null 2>&1; then cat $state/sanitizer* >&2; fail "the sanitizers reported errors"; fi
echo "test_jq: node.json answers jq as the files do"
