#!/bin/sh
# A DESTDIR install is whole and finds its own files: the daemon, the tools,
# the unit, the manual and barswap.pc land under DESTDIR; barswap.pc's
# version is the library's; and the installed accelfs and accel-smi, run
# from DESTDIR with no hint in the environment, load DESTDIR's simulators
# and find DESTDIR's topologies by name (not the build tree's, not the
# system's).
set -eu
fail() { echo "test_install: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (a FUSE mount with device nodes)"
dest=$(mktemp -d)
mnt=$(mktemp -d)
state="$dest/state"
cleanup() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	rm -rf "$dest"
	rmdir "$mnt"
}
trap cleanup EXIT
# A daemon in the background has no stderr: an ASan/UBSan build reports into files checked at the end.
export ASAN_OPTIONS="log_path=$dest/sanitizer:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="log_path=$dest/sanitizer:print_stacktrace=1:${UBSAN_OPTIONS:-}"
meson install -C "$BUILD_ROOT" --no-rebuild --quiet --destdir "$dest" >/dev/null || fail "meson install failed"
root="$dest$PREFIX"

for f in sbin/accelfs bin/accel-smi bin/barswap bin/accel-wait lib/systemd/system/accelfs.service \
	share/man/man8/accelfs.8 share/man/man5/accelfs.5 share/man/man1/accel-smi.1 share/man/man1/barswap.1 \
	share/man/man1/accel-wait.1 share/man/man8/accelfs-hook.8 share/man/man8/accelfs-dra.8 etc/default/accelfs \
	share/bash-completion/completions/accel-smi share/bash-completion/completions/barswap \
	share/bash-completion/completions/accel-wait \
	share/accelfs/topologies/small.json include/barswap.h; do
	[ -e "$root/$f" ] || fail "$PREFIX/$f was not installed"
done
# The settings file is where the unit reads it (EnvironmentFile=-PATH), with nothing set.
envfile=$(sed -n 's/^EnvironmentFile=-//p' "$root/lib/systemd/system/accelfs.service")
[ -f "$dest$envfile" ] || fail "the unit reads $envfile, which was not installed"
! grep -q '^[^#]' "$dest$envfile" || fail "$envfile sets something: $(grep '^[^#]' "$dest$envfile")"
# The Slurm plugstack snippet goes where Slurm's own plugstack.conf includes it (-Dslurm_confdir).
if [ -n "${ACCELFS_SLURM_SYNC:-}" ]; then
	[ -f "$dest${SLURM_CONFDIR:-/etc/slurm}/plugstack.conf.d/accelfs.conf" ] ||
		fail "the plugstack snippet is not in ${SLURM_CONFDIR:-/etc/slurm}/plugstack.conf.d/"
	[ -f "$dest$PREFIX/share/man/man8/accelfs-slurm-sync.8" ] || fail "accelfs-slurm-sync(8) was not installed"
fi
pc=$(find "$root" -name barswap.pc | head -n 1)
[ -n "$pc" ] || fail "barswap.pc was not installed"
lib=$(find "$root" -name 'libbarswap.so.*.*.*' | head -n 1)
[ -n "$lib" ] || fail "libbarswap.so.X.Y.Z was not installed"
pc_version=$(pkg-config --define-prefix --modversion "$pc")
lib_version=${lib##*/libbarswap.so.}
[ "$pc_version" = "$lib_version" ] || fail "barswap.pc says $pc_version, the library is $lib_version"
# The library's soname and the .pc's -l agree with what was installed.
soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
[ -e "$(dirname "$lib")/$soname" ] || fail "the soname $soname has no link next to $lib"
pkg-config --define-prefix --libs "$pc" | grep -q -- '-lbarswap' || fail "barswap.pc does not link -lbarswap"

# The installed programs, with nothing in the environment pointing anywhere.
unset ACCELFS_SIM_LIBDIR ACCELFS_SIM_TOPOLOGY ACCELFS_SIM_TOPOLOGIES
cd /
"$root/sbin/accelfs" --version >/dev/null || fail "the installed accelfs does not run"
"$root/sbin/accelfs" --sim=small --state-dir="$state" "$mnt" || fail "the installed accelfs --sim=small did not mount"
lib_used=$(sed -n 's/^driver_library: //p' "$mnt/ppu0/info")
case "$lib_used" in
"$dest"/*) ;;
*) fail "the installed accelfs loaded $lib_used, not its own simulator under $dest" ;;
esac
ls "$mnt" | grep -q '^gpu1$' || fail "--sim=small did not give small's two GPUs: $(ls "$mnt")"
"$root/bin/accel-smi" --sim="$state" -L | grep -q '^PPU 1' || fail "the installed accel-smi cannot drive the node"
"$root/bin/barswap" --sim="$state" query >/dev/null || fail "the installed barswap cannot reach the slot"
# Stop the daemon and wait for it: a sanitizer's leak report is written as it exits.
pid=$(cat "$state/accelfs.pid")
fusermount3 -u "$mnt"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if ls $dest/sanitizer* >/dev/null 2>&1; then cat $dest/sanitizer* >&2; fail "the sanitizers reported errors"; fi
echo "test_install: a DESTDIR install is whole, barswap.pc is $pc_version, and it finds its own simulators"
