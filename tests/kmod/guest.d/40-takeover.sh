# Dies parked on pci-stub (as pci-stub.ids= would at boot) are taken over.
. /tests/lib.sh
n=$(ivshmem_devs | wc -l)
on_stub() { for b in $(ivshmem_devs); do readlink /sys/bus/pci/devices/$b/driver | grep -q /pci-stub || return 1; done; }
check "insmod pci-stub ids=$IVSHMEM_ID (from the kernel image)" image_module pci_stub ids=$IVSHMEM_ID
check "pci-stub holds the dies" on_stub
check "insmod bar_swap takeover=0" bs_load ids=$IVSHMEM_ID takeover=0
t bs_bind query 0
check "takeover=0 leaves them on pci-stub" on_stub
check "rmmod" bs_unload
check "insmod bar_swap (takeover default on)" bs_load ids=$IVSHMEM_ID
t bs_bind query "$n"
t bs_bind parked
check "rmmod" bs_unload
check "rmmod pci-stub" rmmod pci_stub
