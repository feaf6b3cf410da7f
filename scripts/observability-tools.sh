#!/usr/bin/env bash
# The observability tools the metrics and traces tests run against, built once into .tools/bin from the Go module
# proxy: Prometheus and promtool (test/integration/metrics.test.ts), Jaeger (test/integration/tracing.test.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
mkdir -p .tools/bin

# Prometheus 3.16's Go module is tagged v0.316.0. Built with remove_all_sd (static and file service discovery only;
# the cloud ones would triple the build) and without builtinassets (the HTTP API works; the web UI is not embedded).
prometheus_version=v0.316.0
for tool in prometheus promtool; do
  if [ ! -x ".tools/bin/$tool" ] || [ "$(cat ".tools/bin/.$tool.version" 2>/dev/null)" != "$prometheus_version" ]; then
    echo "building $tool $prometheus_version into .tools/bin (once; a few minutes)…"
    GOBIN="$PWD/.tools/build" GOFLAGS=-mod=mod go install -tags remove_all_sd "github.com/prometheus/prometheus/cmd/$tool@$prometheus_version"
    mv ".tools/build/$tool" ".tools/bin/$tool"
    echo "$prometheus_version" > ".tools/bin/.$tool.version"
  fi
done

# Jaeger v1.76.0, the all-in-one binary (OTLP receiver, in-memory store, query API). Its go.mod has a replace
# directive, so `go install pkg@version` refuses it: it is built as a tool of a throwaway module that repeats the
# replace. A big build: 27 minutes on 2 shared cores.
jaeger_version=v1.76.0
if [ ! -x .tools/bin/jaeger ] || [ "$(cat .tools/bin/.jaeger.version 2>/dev/null)" != "$jaeger_version" ]; then
  echo "building jaeger $jaeger_version into .tools/bin (once; a big build, up to half an hour)…"
  rm -rf .tools/build-jaeger && mkdir -p .tools/build-jaeger
  (
    cd .tools/build-jaeger
    # Should Jaeger ask for a newer Go than the machine's, the go command fetches that toolchain from the proxy.
    export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" GOFLAGS=-mod=mod
    go mod init cadre-tools/jaeger >/dev/null 2>&1
    go mod edit -replace github.com/Shopify/sarama=github.com/Shopify/sarama@v1.33.0
    go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$jaeger_version"
    go build -o ../bin/jaeger github.com/jaegertracing/jaeger/cmd/jaeger
  )
  echo "$jaeger_version" > .tools/bin/.jaeger.version
  rm -rf .tools/build-jaeger
fi
