#!/bin/bash
# The stand-in postgres image's entrypoint (deploy/containers/postgres/Containerfile): on first start (an empty
# $PGDATA), initdb with POSTGRES_USER as the superuser and POSTGRES_PASSWORD, password (scram-sha-256) logins from
# any address, a database named like the user; then postgres as the postgres user. Later starts only run postgres:
# the password is read on the first start only, as in the official image.
set -euo pipefail
if [ "${1:-}" != postgres ]; then exec "$@"; fi
PGDATA=${PGDATA:-/var/lib/postgresql/data}
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups bash "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD (the password of POSTGRES_USER, read on the first start only)}"
  user=${POSTGRES_USER:-postgres}
  db=${POSTGRES_DB:-$user}
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\";" | postgres --single -D "$PGDATA" postgres >/dev/null
  fi
  echo "docker-entrypoint.sh: initialised $PGDATA (superuser $user, database $db)"
fi
shift
exec postgres -D "$PGDATA" "$@"
