#!/bin/sh
# One-shot set-up of the compose Temporal cluster: SQL schemas (idempotent), then, once the server is up,
# the namespace and the contract's search attributes. Run by the temporal-setup and temporal-init services.
set -eu
case "${1:-}" in
  schema)
    for db in temporal temporal_visibility; do
      dir=temporal
      [ "$db" = temporal_visibility ] && dir=visibility
      temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p 5432 -u "$POSTGRES_USER" --pw "$POSTGRES_PWD" --db "$db" create || true
      temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p 5432 -u "$POSTGRES_USER" --pw "$POSTGRES_PWD" --db "$db" setup-schema -v 0.0 || true
      temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p 5432 -u "$POSTGRES_USER" --pw "$POSTGRES_PWD" --db "$db" \
        update-schema -d "/etc/temporal/schema/postgresql/v12/$dir/versioned"
    done
    ;;
  init)
    until temporal operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do sleep 2; done
    temporal operator namespace describe --address "$TEMPORAL_ADDRESS" -n "$TEMPORAL_NAMESPACE" >/dev/null 2>&1 ||
      temporal operator namespace create --address "$TEMPORAL_ADDRESS" -n "$TEMPORAL_NAMESPACE" --retention 30d
    for name in MerchantReference FinanceApplicationId FinanceApplicationStatus ConsentId RefreshTaskId DuplicateFinanceApplicationId; do
      temporal operator search-attribute create --address "$TEMPORAL_ADDRESS" -n "$TEMPORAL_NAMESPACE" --name "$name" --type Keyword --yes || true
    done
    for name in FinanceApplicationCreatedAt; do
      temporal operator search-attribute create --address "$TEMPORAL_ADDRESS" -n "$TEMPORAL_NAMESPACE" --name "$name" --type Datetime --yes || true
    done
    ;;
  *)
    echo "usage: setup.sh schema|init" >&2
    exit 2
    ;;
esac
