#!/usr/bin/env bash
# Spark 4 needs Java 17 or newer. Use the one on PATH or JAVA_HOME; else install
# Debian's OpenJDK 17 when we are root with apt-get; else explain and fail.
set -u
java_major() {
  "$1" -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}
for j in "${JAVA_HOME:-}/bin/java" "$(command -v java 2>/dev/null)"; do
  if [ -x "$j" ] && [ "$(java_major "$j")" -ge 17 ] 2>/dev/null; then
    exit 0
  fi
done
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Java 17+ not found: installing Debian's openjdk-17-jre-headless for Spark" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless) >&2 && exit 0
fi
cat >&2 <<'MSG'
rmqlab: Spark needs Java 17 or newer, and none was found.
  Debian/Ubuntu:  sudo apt-get install openjdk-17-jre-headless
  macOS:          brew install openjdk@17
  or set JAVA_HOME to a JDK 17+ installation, then run the command again.
MSG
exit 1
