#!/bin/sh
# One-shot set-up of a Postgres-backed Temporal cluster: SQL schemas, then, once the server is up, the namespace
# and the contract's search attributes. Run by compose's temporal-setup and temporal-init services and by
# `npm run test:cluster` (tools/cluster/), so the same script is tested on every CI run.
# Every step is idempotent (safe to run again on a set-up cluster) and every failure stops the script.
#
# schema: DB_PORT (5432), POSTGRES_SEEDS, POSTGRES_USER, POSTGRES_PWD; TEMPORAL_SCHEMA_DIR (the admin-tools image's
#         /etc/temporal/schema; elsewhere the server module's schema/ folder); TEMPORAL_SQL_TOOL (temporal-sql-tool).
# init:   TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE (default), TEMPORAL_CLI (temporal), TEMPORAL_INIT_TIMEOUT_S (300).
set -eu

# The contract's search attributes, name:type (src/shared/search-attributes.ts).
SEARCH_ATTRIBUTES="MerchantId:Keyword MerchantReference:Keyword FinanceApplicationId:Keyword FinanceApplicationStatus:Keyword ConsentId:Keyword RefreshTaskId:Keyword DuplicateFinanceApplicationId:Keyword ConsentClaimConflict:Keyword FinanceApplicationCreatedAt:Datetime"

# INDEXED_VALUE_TYPE_<TYPE> of a type name (Keyword → KEYWORD, Datetime → DATETIME).
indexed_type() {
  printf 'INDEXED_VALUE_TYPE_%s' "$(printf '%s' "$1" | tr '[:lower:]' '[:upper:]')"
}

fail() {
  echo "setup.sh: $*" >&2
  exit 1
}

schema() {
  : "${POSTGRES_SEEDS:?set POSTGRES_SEEDS (the Postgres host)}"
  : "${POSTGRES_USER:?set POSTGRES_USER}"
  : "${POSTGRES_PWD:?set POSTGRES_PWD}"
  sql_tool=${TEMPORAL_SQL_TOOL:-temporal-sql-tool}
  schema_dir=${TEMPORAL_SCHEMA_DIR:-/etc/temporal/schema}/postgresql/v12
  [ -d "$schema_dir/temporal/versioned" ] || fail "no Postgres schema in $schema_dir (set TEMPORAL_SCHEMA_DIR)"
  for db in temporal temporal_visibility; do
    dir=temporal
    [ "$db" = temporal_visibility ] && dir=visibility
    # create: an existing database is not an error; setup-schema -v 0.0: creates the version tables only where
    # missing and never lowers a recorded version; update-schema: applies the versions not yet applied.
    for step in create "setup-schema -v 0.0" "update-schema -d $schema_dir/$dir/versioned"; do
      # shellcheck disable=SC2086 # $step is split on purpose: a command and its flags
      "$sql_tool" --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "${DB_PORT:-5432}" -u "$POSTGRES_USER" \
        --pw "$POSTGRES_PWD" --db "$db" $step || fail "temporal-sql-tool $step on $db failed"
    done
    echo "setup.sh: schema of $db is up to date"
  done
}

init() {
  : "${TEMPORAL_ADDRESS:?set TEMPORAL_ADDRESS (host:port of the frontend)}"
  cli=${TEMPORAL_CLI:-temporal}
  ns=${TEMPORAL_NAMESPACE:-default}
  deadline=$(($(date +%s) + ${TEMPORAL_INIT_TIMEOUT_S:-300}))
  until "$cli" operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "Temporal at $TEMPORAL_ADDRESS not healthy in time"
    sleep 2
  done
  if ! "$cli" operator namespace describe --address "$TEMPORAL_ADDRESS" -n "$ns" >/dev/null 2>&1; then
    "$cli" operator namespace create --address "$TEMPORAL_ADDRESS" -n "$ns" --retention 30d ||
      fail "could not create namespace $ns"
  fi
  # A namespace just created can take a moment to reach every frontend: list until it answers.
  until listed=$("$cli" operator search-attribute list --address "$TEMPORAL_ADDRESS" -n "$ns" -o json 2>/dev/null); do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      # Once more with its error shown.
      listed=$("$cli" operator search-attribute list --address "$TEMPORAL_ADDRESS" -n "$ns" -o json) ||
        fail "cannot list search attributes of namespace $ns"
      break
    fi
    sleep 1
  done
  missing=""
  created=""
  for entry in $SEARCH_ATTRIBUTES; do
    name=${entry%%:*}
    type=${entry#*:}
    if printf '%s\n' "$listed" | grep -q "\"$name\": \"$(indexed_type "$type")\""; then continue; fi
    printf '%s\n' "$listed" | grep -q "\"$name\":" && fail "search attribute $name exists with a type other than $type"
    missing="$missing $entry"
    created="$created $name"
  done
  for entry in $missing; do
    "$cli" operator search-attribute create --address "$TEMPORAL_ADDRESS" -n "$ns" --name "${entry%%:*}" \
      --type "${entry#*:}" || fail "could not create search attribute ${entry%%:*}"
  done
  listed=$("$cli" operator search-attribute list --address "$TEMPORAL_ADDRESS" -n "$ns" -o json) ||
    fail "cannot list search attributes of namespace $ns"
  for entry in $SEARCH_ATTRIBUTES; do
    name=${entry%%:*}
    printf '%s\n' "$listed" | grep -q "\"$name\": \"$(indexed_type "${entry#*:}")\"" ||
      fail "search attribute $name is missing after registration"
  done
  echo "setup.sh: namespace $ns has every search attribute (created:${created:- none})"
}

case "${1:-}" in
  schema) schema ;;
  init) init ;;
  *)
    echo "usage: setup.sh schema|init" >&2
    exit 2
    ;;
esac
