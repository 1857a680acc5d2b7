# Lending a die to a driver, and the lease (docs/kmod.md, "Lend" and "The lease").
# The stand-in GPU driver is uio_pci_generic from the kernel image; vfio-pci is
# allowed but never loaded (ENOENT); pci-stub is loaded but not allowed (EPERM).
. /tests/lib.sh
check "load uio_pci_generic from the kernel image" image_module uio_pci_generic
check "load pci-stub (not in lend_drivers=)" image_module pci_stub
check "insmod bar_swap with a RAM die and lend_drivers=uio_pci_generic,vfio-pci" \
	bs_load ids=$IVSHMEM_ID sim_dies=1 sim_size=1M lend_drivers=uio_pci_generic,vfio-pci
# die 0 is the RAM die, 1..4 the ivshmem dies in bus order (4 is the 16 GiB one)
t bs_lend lend 1 2 0
t bs_lend resident 2
t bs_lend lease 3 2
t bs_lend lease-lent 1 3
check "the kernel log says the lease returned the lent die first" sh -c \
	'dmesg | grep -q "lease of 400 ms expired.*returning it from uio_pci_generic first"'
check "lend_drivers= can be emptied at run time" sh -c 'echo > /sys/module/bar_swap/parameters/lend_drivers'
t bs_lend refused 1
check "rmmod bar_swap" bs_unload
check "every die lent was given back: none bound to uio_pci_generic" sh -c \
	'! ls /sys/bus/pci/drivers/uio_pci_generic | grep -q "^0000:"'

# Slot mode: the 16 GiB die leaves the bus, and its address becomes a free slot
# the three 64 MiB dies decode at in turn; a lent die's resource says so.
big="" slot=0
for b in $(ivshmem_devs); do
	set -- $(bar_of "$b" 2)
	[ "$2" -gt 1073741824 ] && big=$b slot=$1
done
check "the 16 GiB die leaves the bus ($big)" sh -c "echo 1 > /sys/bus/pci/devices/$big/remove"
check "insmod bar_swap slot_addr=$slot lend_drivers=uio_pci_generic" \
	bs_load ids=$IVSHMEM_ID slot_addr=$slot lend_drivers=uio_pci_generic
t bs_lend slot 0 "$slot" 2
check "rmmod bar_swap" bs_unload
check "rmmod uio_pci_generic" rmmod uio_pci_generic
