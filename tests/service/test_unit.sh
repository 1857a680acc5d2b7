#!/bin/sh
# The installed unit passes `systemd-analyze verify` with nothing to say,
# as it would be installed: the DESTDIR's PREFIX is laid over the real one
# (a read-only overlay in a mount namespace of this test's own, so the host
# sees nothing), which lets systemd-analyze find the daemon it starts and
# the man pages its Documentation= names.  And the unit keeps the rules no
# verifier knows: it loads no module and touches no PCI device, stays in the
# host's mount namespace, and waits for readiness.
set -eu
fail() { echo "test_unit: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (a mount namespace)"
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$BUILD_ROOT" --no-rebuild --quiet --destdir "$dest" >/dev/null || fail "meson install failed"
unit=$(cd "$dest" && find . -name accelfs.service | sed 's/^\.//')
[ -n "$unit" ] || fail "accelfs.service was not installed"
case "$unit" in "$PREFIX"/*) ;; *) fail "accelfs.service is outside the prefix: $unit" ;; esac

out=$(unshare --mount --propagation private sh -ec '
	mount -t overlay accelfs-test -o "lowerdir=$1$2:$2" "$2"
	MANPATH="$2/share/man:" systemd-analyze verify --man=yes "$3" 2>&1
' sh "$dest" "$PREFIX" "$unit") || fail "systemd-analyze verify failed:
$out"
[ -z "$out" ] || fail "systemd-analyze verify has something to say:
$out"

text=$(grep -v '^#' "$dest$unit")
printf '%s\n' "$text" | grep -qx 'Type=notify' || fail "the unit is not Type=notify"
printf '%s\n' "$text" | grep -q '^ExecStart=.*accelfs --foreground' || fail "ExecStart does not run accelfs in the foreground"
printf '%s\n' "$text" | grep -q '^EnvironmentFile=-' || fail "the unit has no optional environment file"
for rule in 'modprobe' 'insmod' 'bar_swap' '/sys/bus/pci' 'setpci' 'ProtectSystem' 'ProtectHome' 'PrivateTmp' \
	'PrivateDevices' 'PrivateMounts' 'ReadWritePaths' 'ReadOnlyPaths' 'TemporaryFileSystem' 'MountFlags' \
	'ProtectKernelModules' 'ProtectClock' 'ProtectKernelLogs' 'ProtectKernelTunables' 'ProtectControlGroups' \
	'DeviceAllow' 'CAP_SYS_MODULE' 'CAP_SYS_RAWIO'; do
	printf '%s\n' "$text" | grep -q "$rule" && fail "the unit says $rule: $(printf '%s\n' "$text" | grep "$rule")"
done
printf '%s\n' "$text" | grep -q '^RestartPreventExitStatus=2' || fail "a usage error (2) would be restarted"

# With Slurm, accelfs-slurm-sync's unit too: verified the same way, after accelfs, in the host's namespace.
if [ -n "${ACCELFS_SLURM_SYNC:-}" ]; then
	sync=$(cd "$dest" && find . -name accelfs-slurm-sync.service | sed 's/^\.//')
	[ -n "$sync" ] || fail "accelfs-slurm-sync.service was not installed"
	[ "$(dirname "$sync")" = "$(dirname "$unit")" ] || fail "accelfs-slurm-sync.service is not beside accelfs.service"
	out=$(unshare --mount --propagation private sh -ec '
		mount -t overlay accelfs-test -o "lowerdir=$1$2:$2" "$2"
		MANPATH="$2/share/man:" systemd-analyze verify --man=yes "$3" 2>&1
	' sh "$dest" "$PREFIX" "$sync") || fail "systemd-analyze verify failed on accelfs-slurm-sync.service:
$out"
	# accelfs.service is not where systemd looks (it is in DESTDIR): the one thing verify may say.
	out=$(printf '%s\n' "$out" | grep -v "accelfs.service" || true)
	[ -z "$out" ] || fail "systemd-analyze verify has something to say on accelfs-slurm-sync.service:
$out"
	text=$(grep -v '^#' "$dest$sync")
	printf '%s\n' "$text" | grep -q '^ExecStart=.*/accelfs-slurm-sync --mount=' || fail "ExecStart does not run the sync"
	printf '%s\n' "$text" | grep -q '^After=.*accelfs.service' || fail "the sync does not start after accelfs"
	printf '%s\n' "$text" | grep -q '^EnvironmentFile=-' || fail "the sync's unit has no optional environment file"
	printf '%s\n' "$text" | grep -q '^RestartPreventExitStatus=2' || fail "a usage error (2) of the sync would be restarted"
	for rule in 'ProtectSystem' 'PrivateTmp' 'PrivateMounts' 'MountFlags' 'TemporaryFileSystem'; do
		printf '%s\n' "$text" | grep -q "$rule" && fail "the sync's unit says $rule: it must see the host's mount"
	done
fi
echo "test_unit: systemd-analyze verify passes on the installed units"
