#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the `reprise check --slurm`
# and `reprise tune --slurm` tests: munged, slurmctld and slurmd started
# without systemd, as root, and a wait until the node is idle.
# scripts/slurm-down.sh stops them again.
#
# Needs Debian's slurm-wlm and munge (Slurm 22.05 on Debian 12), and root.
# Debian's Slurm reads /etc/slurm/slurm.conf; a slurm.conf already there
# that this script did not write is kept as slurm.conf.before-reprise and
# put back by slurm-down.sh.
#
# Environment: SLURM_UP_TIMEOUT (seconds to wait for the node, default 60),
# SLURM_STATE_DIR (state, spool and logs; default /var/lib/reprise-slurm).
set -euo pipefail

conf_dir=/etc/slurm
conf=$conf_dir/slurm.conf
state=${SLURM_STATE_DIR:-/var/lib/reprise-slurm}
timeout=${SLURM_UP_TIMEOUT:-60}
marker="# written by reprise scripts/slurm-up.sh"

die() {
    echo "slurm-up: error: $*" >&2
    exit 1
}

[ "$(id -u)" = 0 ] || die "run as root (slurmd and munged need it)"
for tool in munged slurmctld slurmd sinfo scontrol; do
    command -v "$tool" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin
    command -v "$tool" >/dev/null 2>&1 ||
        die "$tool is missing: install Debian's slurm-wlm and munge"
done
id munge >/dev/null 2>&1 || die "no munge user: install Debian's munge package"

mkdir -p "$state"/{ctld,spool,log}
cpus=$(nproc)
# What the node offers: its memory less a margin (a tenth, at least 512 MiB)
# for the daemons and the system, so that slurmd's own count is not below it.
total_mib=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))
margin=$((total_mib / 10 > 512 ? total_mib / 10 : 512))
memory=$((total_mib - margin))
[ "$memory" -gt 0 ] || memory=$total_mib

mkdir -p "$conf_dir"
if [ -f "$conf" ] && ! grep -qF "$marker" "$conf"; then
    mv "$conf" "$conf.before-reprise"
fi
cat >"$conf" <<EOF
$marker
ClusterName=reprise-ci
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# No systemd, no cgroup freezer: track processes through /proc, bind nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# Cores, not memory: with memory counted, a 4-task array runs one at a time.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerType=sched/backfill
# No slurmdbd: no accounting storage (sacct has nothing to read).
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# Finished jobs stay visible to scontrol for a while.
MinJobAge=600
KillWait=5
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF

# munge: a key (kept when there is one), its run directory, the daemon.
key=/etc/munge/munge.key
if [ ! -s "$key" ]; then
    mkdir -p /etc/munge
    if command -v mungekey >/dev/null 2>&1; then
        mungekey --create --keyfile="$key" --force
    else
        dd if=/dev/urandom of="$key" bs=1 count=1024 status=none
    fi
fi
chown -R munge:munge /etc/munge
chmod 700 /etc/munge
chmod 400 "$key"
mkdir -p /run/munge /var/lib/munge /var/log/munge
chown munge:munge /run/munge /var/lib/munge /var/log/munge
chmod 755 /run/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    if command -v runuser >/dev/null 2>&1; then
        runuser -u munge -- munged
    else
        su -s /bin/sh munge -c munged
    fi
    for _ in $(seq 50); do
        munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
        sleep 0.1
    done
    munge -n | unmunge >/dev/null || die "munged did not start (see /var/log/munge/munged.log)"
fi

dump_logs() {
    echo "slurm-up: sinfo says:" >&2
    sinfo -N -l >&2 || true
    scontrol show node localhost >&2 || true
    for f in "$state"/log/slurmctld.log "$state"/log/slurmd.log; do
        echo "slurm-up: the end of $f:" >&2
        tail -n 40 "$f" >&2 || true
    done
}

# Daemons left by an earlier run of this script go first.
for pidfile in "$state"/slurmd.pid "$state"/slurmctld.pid; do
    if [ -s "$pidfile" ]; then
        kill "$(cat "$pidfile")" 2>/dev/null || true
        rm -f "$pidfile"
    fi
done
sleep 0.5
slurmctld || { dump_logs; die "slurmctld did not start"; }
slurmd || { dump_logs; die "slurmd did not start"; }

deadline=$((SECONDS + timeout))
while :; do
    node_state=$(sinfo -h -n localhost -o %T 2>/dev/null || true)
    case "$node_state" in
    idle*) break ;;
    down* | drain*)
        # ReturnToService=2 brings it back once slurmd registers; nudge it.
        scontrol update nodename=localhost state=resume 2>/dev/null || true
        ;;
    esac
    if [ "$SECONDS" -ge "$deadline" ]; then
        dump_logs
        die "the node is not idle after ${timeout}s (state: ${node_state:-none})"
    fi
    sleep 0.5
done
echo "slurm-up: one node (localhost, $cpus CPUs, $memory MiB) idle in partition debug"
