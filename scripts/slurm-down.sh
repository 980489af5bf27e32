#!/usr/bin/env bash
# Stops what scripts/slurm-up.sh started: slurmd, slurmctld (by their pid
# files) and munged, and puts back a slurm.conf it moved aside.
set -uo pipefail

conf=/etc/slurm/slurm.conf
state=${SLURM_STATE_DIR:-/var/lib/reprise-slurm}
marker="# written by reprise scripts/slurm-up.sh"

stop() {
    local pidfile=$1
    [ -s "$pidfile" ] || return 0
    local pid
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
}

# Jobs first, so that no task outlives the cluster.
command -v scancel >/dev/null 2>&1 && scancel --full --quiet -u root 2>/dev/null
stop "$state/slurmd.pid"
stop "$state/slurmctld.pid"
stop /run/munge/munged.pid
if [ -f "$conf" ] && grep -qF "$marker" "$conf"; then
    rm -f "$conf"
    [ -f "$conf.before-reprise" ] && mv "$conf.before-reprise" "$conf"
fi
echo "slurm-down: stopped"
