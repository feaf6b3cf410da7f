#!/bin/sh
# Temporal's databases and schemas on PostgreSQL, by Temporal's own schema tool. docker/compose.yaml's
# temporal-schema job and `npm run test:cluster` (test/cluster/stack.ts) both run this file, so the deployed shape
# and the tested one take the same steps. Safe to run again: an existing database is kept and applied schema versions
# are skipped, so the same command upgrades the schema after a server upgrade.
#
# Environment: SQL_HOST, SQL_PORT, SQL_USER, SQL_PASSWORD (temporal-sql-tool reads them itself) and
# TEMPORAL_SCHEMA_DIR, the server release's schema/postgresql/v12 folder (/etc/temporal/schema/postgresql/v12 in the
# temporalio/admin-tools image).
set -eu
export SQL_PLUGIN=postgres12
for pair in temporal:temporal temporal_visibility:visibility; do
  db=${pair%%:*}
  schema=${pair#*:}
  if temporal-sql-tool --db "$db" create-database 2>/dev/null; then
    echo "created database $db"
  fi
  temporal-sql-tool --db "$db" setup-schema -v 0.0
  temporal-sql-tool --db "$db" update-schema -d "$TEMPORAL_SCHEMA_DIR/$schema/versioned"
done
