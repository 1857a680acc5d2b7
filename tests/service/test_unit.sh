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
echo "test_unit: systemd-analyze verify passes on the installed unit"
