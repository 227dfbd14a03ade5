#!/usr/bin/env bash
# Spark 4 needs Java 17 or newer; the RocketMQ oracle of the tests (tests/oracle) also
# needs a JDK (javac) and Maven. Use what is on PATH or JAVA_HOME; else install Debian's
# OpenJDK 17 and Maven when we are root with apt-get; else explain. A missing JRE fails
# (Spark); a missing JDK or Maven only warns here: the oracle tests then skip with the
# reason, except under CI, where they fail.
set -u
java_major() {
  "$1" -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}
have_java=no
for j in "${JAVA_HOME:-}/bin/java" "$(command -v java 2>/dev/null)"; do
  if [ -x "$j" ] && [ "$(java_major "$j")" -ge 17 ] 2>/dev/null; then
    have_java=yes
    break
  fi
done
have_javac=no
if [ -x "${JAVA_HOME:-/nonexistent}/bin/javac" ] || command -v javac >/dev/null 2>&1; then have_javac=yes; fi
have_mvn=no
if command -v mvn >/dev/null 2>&1; then have_mvn=yes; fi
[ "$have_java$have_javac$have_mvn" = yesyesyes ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  pkgs=""
  [ "$have_java$have_javac" = yesyes ] || pkgs="$pkgs openjdk-17-jdk-headless"
  [ "$have_mvn" = yes ] || pkgs="$pkgs maven"
  echo "installing Debian's$pkgs (Spark needs Java 17; the RocketMQ oracle tests need a JDK and Maven)" >&2
  if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs) >&2; then
    exit 0
  fi
fi
if [ "$have_java" = no ]; then
  cat >&2 <<'MSG'
rmqlab: Spark needs Java 17 or newer, and none was found.
  Debian/Ubuntu:  sudo apt-get install openjdk-17-jdk-headless maven
  macOS:          brew install openjdk@17 maven
  or set JAVA_HOME to a JDK 17+ installation, then run the command again.
MSG
  exit 1
fi
echo "rmqlab: no JDK (javac) or Maven: the tests against a live RocketMQ (tests/oracle) will be skipped" \
     "(Debian/Ubuntu: sudo apt-get install openjdk-17-jdk-headless maven)" >&2
exit 0
