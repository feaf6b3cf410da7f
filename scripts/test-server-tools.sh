#!/usr/bin/env bash
# Temporal's time-skipping test server for the workflow-level tests (test/workflows/, test/support/time-skipping.ts),
# fetched once from Maven Central into .tools/temporal-test-server. The TypeScript SDK's createTimeSkipping() would
# download a native build of it from the internet at run time; the Java build of the same server
# (io.temporal:temporal-test-server) comes from a package registry instead and runs on the machine's Java (17+).
# .tools/bin/temporal-test-server is the executable the SDK is pointed at: the SDK runs it as `<path> <port>`.
set -euo pipefail
cd "$(dirname "$0")/.."

version=1.38.0
dir=.tools/temporal-test-server
if [ -x .tools/bin/temporal-test-server ] && [ "$(cat "$dir/.version" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's Java and Maven for Temporal's test server…"
    (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless maven >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless maven >/dev/null; })
  else
    echo "the workflow tests need Java 17+ and Maven for Temporal's test server: install them, e.g. 'sudo apt-get install default-jdk-headless maven'" >&2
    exit 1
  fi
fi

echo "fetching Temporal's test server $version and its dependencies from Maven Central into $dir (once)…"
rm -rf "$dir" .tools/build-test-server
mkdir -p "$dir/lib" .tools/build-test-server .tools/bin
# A throwaway project whose one dependency is the test server: Maven resolves its runtime closure and copies the jars.
cat > .tools/build-test-server/pom.xml <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>cadre</groupId>
  <artifactId>temporal-test-server-fetch</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>io.temporal</groupId>
      <artifactId>temporal-test-server</artifactId>
      <version>$version</version>
    </dependency>
  </dependencies>
</project>
EOF
mvn -q -B -f .tools/build-test-server/pom.xml -Dmaven.repo.local="$PWD/.tools/build-test-server/m2" \
  org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$PWD/$dir/lib"
rm -rf .tools/build-test-server

cat > .tools/bin/temporal-test-server <<'EOF'
#!/usr/bin/env bash
# Temporal's Java test server with time skipping; the first argument is the port (how the SDK starts it).
here="$(cd "$(dirname "$0")/../temporal-test-server" && pwd)"
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -cp "$here/lib/*" io.temporal.testserver.TestServer "$@"
EOF
chmod +x .tools/bin/temporal-test-server
echo "$version" > "$dir/.version"
