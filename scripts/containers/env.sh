# Sourced by the container scripts: one podman configuration for all of them (scripts/containers/containers.conf).
# shellcheck shell=bash
containers_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export CONTAINERS_CONF="$containers_dir/containers.conf"
# Docker's image format keeps HEALTHCHECK (OCI's has no field for it).
export BUILDAH_FORMAT=docker
# podman's network helper (netavark) runs iptables, which Debian keeps in /usr/sbin: a PATH without it (a non-login
# shell, `env -i`) fails every container start with "netavark: No such file or directory".
case ":$PATH:" in
  *:/usr/sbin:*) ;;
  *) export PATH="$PATH:/usr/sbin:/sbin" ;;
esac
