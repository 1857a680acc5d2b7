# accelfs over bar_swap.ko: a holder of dies/<n>/vram lends the die to a stand-in
# GPU driver (uio_pci_generic) through dies/<n>/driver, and the lease; what an
# operator does from a shell (docs/dies.md, "Running a compute job on a die").
. /tests/lib.sh
. /tests/dies-guest.inc
check "load fuse from the kernel image" image_module fuse
check "load uio_pci_generic (the stand-in GPU driver)" image_module uio_pci_generic
check "load pci-stub (loaded, but not in lend_drivers=)" image_module pci_stub
check "insmod bar_swap ids=$IVSHMEM_ID lend_drivers=uio_pci_generic" bs_load ids=$IVSHMEM_ID lend_drivers=uio_pci_generic
check "accelfs mounts /accel without --sim" accelfs_up
bdf=$(sed -n 's/^bus_id: //p' /accel/dies/1/info)
bound() { [ "$(basename "$(readlink /sys/bus/pci/devices/$bdf/driver)")" = "$1" ]; }
waitfor() { for _i in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
alive() { kill -0 "$1" 2>/dev/null; }
uptime_ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }

check "dies/1/driver says bar_swap" grep -qx bar_swap /accel/dies/1/driver
check_not "writing dies/1/driver without holding dies/1/vram is refused" sh -c 'echo uio_pci_generic > /accel/dies/1/driver'
check_not "a holder's lend to pci-stub (not in lend_drivers=) is refused" sh -c \
	'exec 3<>/accel/dies/1/vram; echo pci-stub > /accel/dies/1/driver'
check "... and the die stays on bar_swap" bound bar_swap

# Lend, others wait, close returns it and the slot moves on.
echo hello-lent > /accel/dies/1/vram
mkfifo /tmp/lend.ctl
sh -c 'exec 3<>/accel/dies/1/vram; echo uio_pci_generic > /accel/dies/1/driver && echo lent; read x </tmp/lend.ctl' \
	>/tmp/lend.out 2>&1 &
lender=$!
check "a holder lends die 1 to uio_pci_generic" waitfor /tmp/lend.out lent
check "sysfs: die 1's driver link is uio_pci_generic" bound uio_pci_generic
check "dies/1/driver says uio_pci_generic" grep -qx uio_pci_generic /accel/dies/1/driver
check "dies/1/info: state lent, to uio_pci_generic, by the lender" sh -c \
	"grep -qx 'state: lent' /accel/dies/1/info && grep -qx 'lent_to: uio_pci_generic' /accel/dies/1/info &&
	 grep -qx 'lender_pid: $lender' /accel/dies/1/info"
check "dies/slot: lent, waiting on the lender" sh -c \
	"grep -q '^lent: die 1 to uio_pci_generic by pid $lender' /accel/dies/slot &&
	 grep -q '^waiting_on: pid $lender, the lender' /accel/dies/slot"
head -c 4 /accel/dies/2/vram >/tmp/h2 &
other=$!
sleep 1
check "another die's opener waits while die 1 is lent" sh -c "kill -0 $other && grep -qx 'waiters: 1' /accel/dies/slot"
check "dies/slot lists the waiter with its pid" grep -q "^waiter: pid=$other die=2 " /accel/dies/slot
echo go >/tmp/lend.ctl
wait $lender
wait $other
check "the lender's close returns the die to bar_swap" bound bar_swap
check "... and the waiter got the slot" test "$(wc -c </tmp/h2)" -eq 4
check "what was written before the lend is still there" sh -c '[ "$(head -c 10 /accel/dies/1/vram)" = hello-lent ]'

# Writing bar_swap takes it back; the holder keeps the slot.
check "echo bar_swap > dies/1/driver returns it, the holder reads on" sh -c \
	'exec 3<>/accel/dies/1/vram; echo uio_pci_generic > /accel/dies/1/driver &&
	 [ "$(cat /accel/dies/1/driver)" = uio_pci_generic ] && echo bar_swap > /accel/dies/1/driver &&
	 [ "$(cat /accel/dies/1/driver)" = bar_swap ] && [ "$(head -c 10 <&3)" = hello-lent ]'

# Killing the lender returns it.
sh -c 'exec 3<>/accel/dies/1/vram; echo uio_pci_generic > /accel/dies/1/driver && echo lent; exec sleep 100' \
	>/tmp/kill.out 2>&1 &
lender=$!
check "a second lender lends die 1" waitfor /tmp/kill.out lent
head -c 4 /accel/dies/2/vram >/tmp/h2 &
other=$!
sleep 0.5
check "... another die's opener waits" alive $other
kill -9 $lender
wait $other
check "kill -9 of the lender returns the die and the slot moves on" bound bar_swap
check "dies/1/info: parked again" grep -qx "state: parked" /accel/dies/1/info

# The lease: a holder that sleeps is revoked, the waiter gets the slot.
check "echo 1000 > dies/lease_ms" sh -c 'echo 1000 > /accel/dies/lease_ms && grep -qx 1000 /accel/dies/lease_ms'
sh -c 'exec 3</accel/dies/0/vram; echo held; sleep 3; dd bs=4 count=1 <&3 >/dev/null' >/tmp/lease.out 2>&1 &
holder=$!
check "a holder opens die 0 and sleeps" waitfor /tmp/lease.out held
t0=$(uptime_ms)
head -c 4 /accel/dies/3/vram >/dev/null &
waiter=$!
sleep 0.3
check "dies/slot lists the holder with its lease left" grep -q "^holder: pid=$holder die=0 lease_left_ms=[0-9]" /accel/dies/slot
check "dies/slot lists the waiter" grep -q "^waiter: pid=$waiter die=3 " /accel/dies/slot
wait $waiter
t1=$(uptime_ms)
check "the waiter got the slot after the lease ($((t1 - t0)) ms)" test $((t1 - t0)) -ge 700
wait $holder
check "the revoked holder's next read fails: Timer expired (ETIME)" sh -c "cat /tmp/lease.out; grep -q \"Timer expired\" /tmp/lease.out"
check "the daemon's log says the lease ran out" grep -q "the lease ran out" $STATE/accelfs.log
check "echo 0 > dies/lease_ms" sh -c 'echo 0 > /accel/dies/lease_ms'
check "umount; accelfs exits" accelfs_down
check "rmmod bar_swap (no die lent)" bs_unload
check "rmmod uio_pci_generic" rmmod uio_pci_generic
