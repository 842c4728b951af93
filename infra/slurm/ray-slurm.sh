# schedlab on a SLURM allocation: shell functions that start a Ray cluster
# inside the job (head on the first node, one worker per other node) and wait
# for it. Sourced by schedlab.sbatch; the tests run these same functions on
# one host (two raylets on 127.0.0.1).
#
# Every Ray process inherits RAY_AUTH_MODE / RAY_AUTH_TOKEN from the job: the
# sbatch script sets a fresh token, so only processes of this job can join.
# RAY_SLURM_TMP, if set, is passed as --temp-dir (keep it short: Ray's Unix
# socket paths live under it); RAY_SLURM_EXTRA holds extra `ray start` options
# (e.g. "--object-store-memory 4000000000").

# The address the other nodes reach this host by: RAY_SLURM_IP if set (e.g.
# a cluster whose fast network is not the one `hostname -i` names), else the
# first IPv4 address of this host.
ray_slurm_ip() {
    if [ -n "${RAY_SLURM_IP:-}" ]; then
        echo "$RAY_SLURM_IP"
        return
    fi
    hostname --ip-address | tr ' ' '\n' | grep -E '^[0-9]+(\.[0-9]+){3}$' | head -n 1
}

# ray_slurm_head IP PORT CPUS: the head node's raylet and GCS, in the foreground.
ray_slurm_head() {
    # shellcheck disable=SC2086  # RAY_SLURM_EXTRA is a list of options
    exec ray start --head --node-ip-address="$1" --port="$2" --num-cpus="$3" \
        --include-dashboard=false --disable-usage-stats \
        ${RAY_SLURM_TMP:+--temp-dir="$RAY_SLURM_TMP"} ${RAY_SLURM_EXTRA:-} --block
}

# ray_slurm_worker HEAD_ADDRESS IP CPUS: one more node's raylet, in the foreground.
ray_slurm_worker() {
    # shellcheck disable=SC2086
    exec ray start --address="$1" --node-ip-address="$2" --num-cpus="$3" --disable-usage-stats \
        ${RAY_SLURM_TMP:+--temp-dir="$RAY_SLURM_TMP"} ${RAY_SLURM_EXTRA:-} --block
}

# ray_slurm_wait ADDRESS NODES TIMEOUT: wait until NODES raylets are alive in
# the cluster at ADDRESS (the GCS, IP:PORT); exit status 1 after TIMEOUT s.
ray_slurm_wait() {
    local address=$1 want=$2 deadline=$((SECONDS + $3)) alive
    while true; do
        alive=$(python - "$address" <<'PY' 2>/dev/null
import sys
import ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
print(sum(1 for n in ray.nodes() if n["Alive"]))
PY
        ) || alive=0
        if [ "${alive:-0}" -ge "$want" ]; then
            echo "ray_slurm_wait: ${alive} node(s) alive at ${address}"
            return 0
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "ray_slurm_wait: ${alive:-0} of ${want} node(s) alive at ${address} after $3 s" >&2
            return 1
        fi
        sleep 2
    done
}
