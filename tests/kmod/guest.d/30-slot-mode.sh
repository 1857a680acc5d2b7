# slot_addr=: every die's VRAM BAR is moved to one address while active.
. /tests/lib.sh
n=0 slot=0 size=0
for b in $(ivshmem_devs); do
	set -- $(bar_of "$b" 2)
	[ "$2" -gt "$size" ] && slot=$1 size=$2
	n=$((n + 1))
done
echo "slot: the largest BAR2, at $slot ($size bytes)"
before=""
for b in $(ivshmem_devs); do before="$before $(od -A n -t x4 -j 24 -N 8 /sys/bus/pci/devices/$b/config)"; done
check "insmod bar_swap ids=$IVSHMEM_ID slot_addr=$slot" bs_load ids=$IVSHMEM_ID slot_addr=$slot
t bs_bind query "$n"
t bs_bind slotmode "$slot"
check "rmmod" bs_unload
after=""
for b in $(ivshmem_devs); do after="$after $(od -A n -t x4 -j 24 -N 8 /sys/bus/pci/devices/$b/config)"; done
check "unbinding restored every BAR ($before)" test "$before" = "$after"

# A slot the largest die cannot be aligned to: it binds but stays unusable.
i=0 big_index=-1 odd=""
for b in $(ivshmem_devs); do
	set -- $(bar_of "$b" 2)
	[ "$2" -eq "$size" ] && [ $big_index -lt 0 ] && big_index=$i
	[ "$2" -lt "$size" ] && [ $(($1 % size)) -ne 0 ] && [ -z "$odd" ] && odd=$1
	i=$((i + 1))
done
check "a small die's BAR is misaligned for the largest ($odd)" test -n "$odd"
check "insmod slot_addr=$odd" bs_load ids=$IVSHMEM_ID slot_addr=$odd
t bs_bind unusable "$big_index"
check "rmmod" bs_unload
