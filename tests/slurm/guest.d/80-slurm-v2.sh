# Real Slurm on a kernel with cgroup v2 alone: munged, slurmctld, slurmd and its slurmstepds with
# Slurm's own cgroup/v2 plugin (IgnoreSystemd: the guest has no systemd), the SPANK plugin on its
# required plugstack line, over a simulated accelfs node mounted in the guest.  A job with
# --accel-mig opens its own capability node (allowed: ENXIO, no driver serves the simulator's
# major) and another job's (EPERM); a CPU-only job runs, may open /dev/null, and is kept from the
# accelerators; and with accelfs stopped a CPU-only job still runs (tests/slurm/test_slurm.py is
# the same on the host's cgroup v1, where Slurm's cgroup/v2 refuses a hybrid layout).
. /tests/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
wait_for() {	# wait_for COND: COND (shell) true within 60 s
	_end=$(($(cut -d. -f1 /proc/uptime) + 60))
	while [ "$(cut -d. -f1 /proc/uptime)" -lt $_end ]; do eval "$1" && return 0; sleep 0.2; done
	return 1
}
cg=/sys/fs/cgroup
grep -q " $cg cgroup2 " /proc/mounts || { mkdir -p $cg && mount -t cgroup2 cgroup2 $cg; } ||
	{ fail "mount cgroup2" "cannot mount"; exit 0; }
grep -q " cgroup " /proc/mounts && { fail "cgroup v2 alone" "a v1 hierarchy is mounted"; exit 0; }
check "load fuse from the kernel image" image_module fuse

# The guest's identity: a host name, loopback, the users munged and the jobs need.
hostname guest
ip link set lo up
# Slurm resolves with AI_ADDRCONFIG, which answers nothing on a host whose only addresses are
# loopback ones: one more address, on lo, is enough.
ip addr add 10.211.0.1/32 dev lo
mkdir -p /etc
echo "127.0.0.1 localhost guest" >/etc/hosts
printf 'root:x:0:0:root:/root:/bin/sh\nmunge:x:101:101:munge:/nonexistent:/bin/sh\n' >/etc/passwd
printf 'root:x:0:\nmunge:x:101:\n' >/etc/group
mkdir -p /root /var/log /var/spool

# accelfs: the Slurm suite's node (one PPU and an H200), simulated.
mkdir -p /accel
ACCELFS_SIM_LIBDIR=/opt/accelfs-sim accelfs --sim=/tests/slurm-topology.json --state-dir=/tmp/st \
	--cdi-dir=/tmp/cdi /accel >/tmp/accelfs.out 2>&1
check "accelfs mounts a simulated node" test -d /accel/mig/4g.48gb
[ -d /accel/mig/4g.48gb ] || { cat /tmp/accelfs.out; tail -n 20 /tmp/st/accelfs.log; exit 0; }

s=/tmp/slurm
mkdir -p $s/state $s/spool $s/out $s/munge $s/munge-run

# A sanitized build (its runtime in /opt/sanitizer, tests/slurm/meson.build): the Slurm programs
# that load the plugin get it preloaded, as tests/slurm/sanitizer.py does on the host: slurmd,
# sbatch, and every slurmstepd through the wrapper slurmd's -d names (slurmd starts the SPANK
# prolog and epilog with an environment of its own).  Their reports go to /tmp/san, which stays empty.
san=
stepd=
if [ -d /opt/sanitizer ]; then
	mkdir -p /tmp/san && chmod 1777 /tmp/san
	cat >$s/san <<EOF
#!/bin/sh
export LD_PRELOAD="$(echo /opt/sanitizer/*)"
export ASAN_OPTIONS=log_path=/tmp/san/asan:detect_leaks=0:halt_on_error=1:abort_on_error=0:disable_coredump=1
export UBSAN_OPTIONS=log_path=/tmp/san/ubsan:print_stacktrace=1:halt_on_error=1:abort_on_error=0
exec "\$@"
EOF
	printf '#!/bin/sh\nexec %s %s "$@"\n' $s/san "$(command -v slurmstepd)" >$s/slurmstepd
	chmod 0755 $s/san $s/slurmstepd
	san=$s/san
	stepd="-d $s/slurmstepd"
	# Whatever ends the script, the reports are seen.
	trap 'if cat /tmp/san/* 2>/dev/null | grep -q .; then fail "the sanitizers report nothing of the plugin in Slurm" "$(cat /tmp/san/*)"
	else pass "the sanitizers report nothing of the plugin in Slurm"; fi' EXIT
fi
head -c 1024 /dev/urandom >$s/munge/munge.key
chmod 0400 $s/munge/munge.key
chmod 0755 $s/munge-run
chown -R munge:munge $s/munge $s/munge-run
su -s /bin/sh munge -c "munged --socket=$s/munge-run/munge.socket --key-file=$s/munge/munge.key \
	--pid-file=$s/munge/munged.pid --log-file=$s/munge/munged.log --seed-file=$s/munge/munged.seed"
check "munged answers" wait_for "[ -S $s/munge-run/munge.socket ]"
[ -S $s/munge-run/munge.socket ] || { cat $s/munge/munged.log; exit 0; }

proc_devices="proc_devices=/tmp/st/sim/thead/proc/devices proc_devices=/tmp/st/sim/nvidia/proc/devices"
cat >$s/slurm.conf <<EOF
ClusterName=guest
SlurmctldHost=guest(127.0.0.1)
SlurmUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$s/munge-run/munge.socket
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd.pid
SlurmctldLogFile=$s/slurmctld.log
SlurmdLogFile=$s/slurmd.log
SlurmdDebug=debug
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=mig
PlugStackConfig=$s/plugstack.conf
PrologFlags=Alloc
MpiDefault=none
ReturnToService=2
KillWait=2
SlurmdParameters=config_overrides
NodeName=guest NodeAddr=127.0.0.1 CPUs=8 RealMemory=100 Gres=mig:4g.48gb:2,mig:1g.18gb:7 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
printf 'NodeName=guest Name=mig Type=4g.48gb Count=2 Flags=CountOnly\nNodeName=guest Name=mig Type=1g.18gb Count=7 Flags=CountOnly\n' >$s/gres.conf
printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\nConstrainDevices=yes\n' >$s/cgroup.conf
echo "required /opt/accelfs/accelfs_spank.so mount=/accel $proc_devices" >$s/plugstack.conf
export SLURM_CONF=$s/slurm.conf

slurmctld -f $s/slurm.conf
check "slurmctld answers" wait_for "timeout 10 scontrol ping >/dev/null 2>&1"
timeout 10 scontrol ping >/dev/null 2>&1 || { timeout 10 scontrol -vvv ping; ls -la $s; tail -n 20 $s/slurmctld.log; netstat -tln; exit 0; }
# What systemd would have made: the slice that slurmd puts its stepd scope in, with the controllers
# of the root delegated to it (IgnoreSystemd=yes: slurmd makes the scope itself).
mkdir -p $cg/system.slice
for c in $(cat $cg/cgroup.controllers); do echo "+$c" >$cg/cgroup.subtree_control; done
$san slurmd -f $s/slurm.conf -N guest $stepd
up() { timeout 10 sinfo -h -n guest -o %T 2>/dev/null | grep -q -E '^(idle|mixed|allocated)'; }
check "slurmd on cgroup/v2 brings the node up" wait_for up
if ! up; then
	fail "the node is up" "$(tail -n 15 $s/slurmd.log | tr '\n' ' ')"
	exit 0
fi

# probe PATH...: each path and what opening it answered, one a line.
cat >$s/probe <<'EOF'
for p in "$@"; do
	if head -c 0 "$p" 2>/tmp/probe.err.$$; then echo "$p ok"
	elif grep -q "not permitted" /tmp/probe.err.$$; then echo "$p EPERM"
	elif grep -q "No such device" /tmp/probe.err.$$; then echo "$p ENXIO"
	else echo "$p $(cat /tmp/probe.err.$$)"; fi
done
EOF
# submit NAME OPTIONS... -- SCRIPT: sbatch; the job id
submit() {
	_sn=$1; shift
	timeout 30 $san sbatch --parsable -o "$s/out/$_sn.out" --chdir=/tmp "$@" | cut -d';' -f1
}
state() { timeout 10 scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
wait_file() { wait_for "[ -s $1 ]"; }

a=$(submit a --accel-mig=4g.48gb --wrap "cat /proc/self/cgroup >$s/out/a.cg; ls \$ACCELFS_MIG_JOBS >$s/out/a.ready; while [ ! -e $s/out/a.release ]; do sleep 0.2; done")
check "a job with --accel-mig starts and gets its partition" wait_file $s/out/a.ready
check "its partition is carved as slurm-$a-0" test -d /accel/mig/4g.48gb/slurm-$a-0
check "the job's task runs in Slurm's cgroup v2 tree" grep -q "^0::/system.slice/.*job_$a/step_batch" $s/out/a.cg
cap=$(awk '$1 ~ /caps/ { print $1; exit }' /accel/mig/4g.48gb/slurm-$a-0/devices)
theirs=/accel/mig/4g.48gb/slurm-$a-0/dev/${cap#/dev/}
check "the first job's capability node is in its dev/" test -c "$theirs"

b=$(submit b --accel-mig=1g.18gb --wrap "sh $s/probe $theirs \$(ls -d \$ACCELFS_MIG_JOBS/dev/nvidia-caps/* | tail -n1) /dev/null >$s/out/b.p && mv $s/out/b.p $s/out/b.probe")
c=$(submit c --wrap "sh $s/probe $theirs /dev/null >$s/out/c.p && mv $s/out/c.p $s/out/c.probe")
check "a second job with --accel-mig ran its probe" wait_file $s/out/b.probe
check "a CPU-only job ran its probe" wait_file $s/out/c.probe
for j in b c; do [ -s $s/out/$j.probe ] || { echo "job $j:"; cat $s/out/$j.out; }; done
expect() {	# expect NAME FILE LINE
	if grep -qx "$3" "$2"; then pass "$1"; else fail "$1" "$(tr '\n' ' ' <"$2")"; fi
}
expect "another job's capability node is refused to a job with a partition" $s/out/b.probe "$theirs EPERM"
if grep -q "caps.* ENXIO$" $s/out/b.probe; then pass "the job's own capability node is allowed"
else fail "the job's own capability node is allowed" "$(tr '\n' ' ' <$s/out/b.probe)"; fi
expect "other devices are allowed" $s/out/b.probe "/dev/null ok"
expect "a CPU-only job is kept from every accelerator node" $s/out/c.probe "$theirs EPERM"
expect "and may open other devices" $s/out/c.probe "/dev/null ok"
check "the node itself may open it (the refusal is the job's cgroup)" sh -c "head -c 0 $theirs 2>/tmp/own.err; ! grep -q 'not permitted' /tmp/own.err"

touch $s/out/a.release
check "the first job ends" wait_for '[ "$(state $a)" = COMPLETED ]'
check "and its partition is given back" wait_for "[ ! -e /accel/mig/4g.48gb/slurm-$a-0 ]"

# accelfs down: a CPU-only task still runs (it needs nothing from accelfs), kept from the nodes.
umount /accel
d=$(submit d --wrap "sh $s/probe /tmp/st/sim/nvidia/dev/nvidia0 /dev/null >$s/out/d.p && mv $s/out/d.p $s/out/d.probe")
check "with accelfs down a CPU-only job still runs" wait_file $s/out/d.probe
[ -s $s/out/d.probe ] || { timeout 10 scontrol show job "$d"; cat $s/out/d.out; grep -v debug $s/slurmd.log | tail -n 20; }
expect "and is still kept from the accelerators" $s/out/d.probe "/tmp/st/sim/nvidia/dev/nvidia0 EPERM"
expect "and may open other devices (accelfs down)" $s/out/d.probe "/dev/null ok"

kill "$(cat $s/slurmd.pid)" "$(cat $s/slurmctld.pid)" 2>/dev/null
exit 0
