# The same over the module's RAM-backed dies (sim_dies=): any machine can run it.
. /tests/lib.sh
. /tests/dies-guest.inc
check "load fuse from the kernel image" image_module fuse
check "insmod bar_swap sim_dies=4 sim_size=16M" bs_load sim_dies=4 sim_size=16M
t seed-api
check "accelfs mounts /accel without --sim" accelfs_up
check "die 0 is a module-simulated die (sim:0)" grep -qx "bus_id: sim:0" /accel/dies/0/info
dies_shell_checks 4
dies_bench_run "sim_dies"
check "umount; accelfs exits" accelfs_down
check "rmmod bar_swap" bs_unload
