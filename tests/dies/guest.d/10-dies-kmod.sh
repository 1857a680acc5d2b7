# accelfs over bar_swap.ko with the four ivshmem dies: /accel/dies from the
# shell and dies_check, through the real ioctls and mappings.
. /tests/lib.sh
. /tests/dies-guest.inc
check "load fuse from the kernel image" image_module fuse
check "insmod bar_swap ids=$IVSHMEM_ID" bs_load ids=$IVSHMEM_ID
t seed-api
check "accelfs mounts /accel without --sim" accelfs_up
check "dies/ exists" test -d /accel/dies
check "die 0 is a PCI die (bus id 0000:...)" grep -q "^bus_id: 0000:" /accel/dies/0/info
check "die 3 is the 16 GiB one" grep -qx "vram_bytes: 17179869184" /accel/dies/3/info
dies_shell_checks 4
dies_bench_run "ivshmem dies"
check "umount; accelfs exits" accelfs_down
check "rmmod bar_swap (no file left open)" bs_unload
mkdir -p /tmp/empty-state /tmp/cdi
check "accelfs without /dev/bar_swap: no dies/" sh -c \
	'accelfs --state-dir=/tmp/empty-state --cdi-dir=/tmp/cdi /accel && ! ls /accel | grep -q dies; r=$?; umount /accel; exit $r'
