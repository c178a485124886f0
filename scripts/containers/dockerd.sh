#!/usr/bin/env bash
# A private Docker engine for the compose test (scripts/containers/compose-test.sh): Debian's dockerd (docker.io),
# started by hand beside whatever else runs here, on its own socket, data root and address pool, so it shares
# nothing with podman's storage or another engine. Idempotent: a running one is kept.
#   scripts/containers/dockerd.sh start   start it (if not running) and wait for its socket; prints DOCKER_HOST
#   scripts/containers/dockerd.sh stop    stop it (its images and volumes stay in the data root)
# Why Docker rather than podman here: compose's health conditions need the engine to run the health checks (podman
# 4.3 runs them from systemd timers, absent on these machines), and the codec gateway resolves names through
# Docker's embedded DNS at 127.0.0.11 (docker-compose.yml, codec-gateway).
# --iptables=false: Docker's own chains stay out of the host's tables (podman's netavark rules are there); published
# ports are served by docker-proxy. One rule is added instead, and removed by `stop`: masquerading for the engine's
# address pool, so the embedded DNS (127.0.0.11) can forward what it does not know itself to the host's resolver.
# Without it those queries time out, and gRPC clients' lookups of a service name (temporal:7233) with them: the
# Temporal CLI's `cluster health` never passes.
set -euo pipefail
state="${PAYLATER_DOCKERD_STATE:-/run/paylater-docker}"
data="${PAYLATER_DOCKERD_DATA:-/var/lib/paylater-docker}"
pool="${PAYLATER_DOCKERD_POOL:-172.29.0.0/16}"
sock="$state/docker.sock"
pidfile="$state/dockerd.pid"
export DOCKER_HOST="unix://$sock"
masquerade=(POSTROUTING -s "$pool" ! -d "$pool" -m comment --comment paylater-docker -j MASQUERADE)

running() { [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && docker version >/dev/null 2>&1; }

case "${1:-start}" in
  start)
    if running; then
      echo "DOCKER_HOST=$DOCKER_HOST"
      exit 0
    fi
    command -v dockerd >/dev/null || {
      echo "dockerd not found: scripts/install-system-packages.sh --compose (Debian's docker.io)" >&2
      exit 1
    }
    mkdir -p "$state" "$data"
    iptables -t nat -C "${masquerade[@]}" 2>/dev/null || iptables -t nat -A "${masquerade[@]}"
    # setsid: the engine outlives the shell that started it (stop it with `dockerd.sh stop`).
    setsid dockerd --host "$DOCKER_HOST" --data-root "$data" --exec-root "$state/exec" --pidfile "$pidfile" \
      --iptables=false --ip-masq=false --ip-forward=false --bridge=none \
      --default-address-pool "base=$pool,size=24" --exec-opt native.cgroupdriver=cgroupfs \
      --default-ulimit nofile=20000:20000 --default-ulimit nproc=32768:32768 \
      --containerd-namespace paylater --containerd-plugins-namespace paylater-plugins \
      >"$state/dockerd.log" 2>&1 </dev/null &
    for _ in $(seq 1 60); do
      if running; then
        echo "DOCKER_HOST=$DOCKER_HOST"
        exit 0
      fi
      sleep 0.5
    done
    echo "dockerd did not start; its log ($state/dockerd.log):" >&2
    tail -30 "$state/dockerd.log" >&2
    exit 1
    ;;
  stop)
    iptables -t nat -D "${masquerade[@]}" 2>/dev/null || true
    pid="$(cat "$pidfile" 2>/dev/null || true)"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 40); do
        kill -0 "$pid" 2>/dev/null || exit 0
        sleep 0.5
      done
      echo "dockerd did not stop in 20 s" >&2
      exit 1
    fi
    ;;
  *)
    echo "usage: dockerd.sh start|stop" >&2
    exit 2
    ;;
esac
