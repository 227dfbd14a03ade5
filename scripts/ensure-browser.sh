#!/usr/bin/env bash
# The lessons' browser test (tests/notebooks/test_browser.py) drives JupyterLab in Debian's
# headless Chromium with its driver. Use them when they are on PATH; else install Debian's
# chromium and chromium-driver when we are root with apt-get (as scripts/ensure-java.sh
# installs Java); else say so: the browser test then skips with the reason. Never fails.
set -u
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's chromium and chromium-driver (the lessons' browser test)" >&2
  if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver) >/dev/null 2>&1; then
    exit 0
  fi
fi
echo "rmqlab: no Chromium/chromedriver (apt-get install chromium chromium-driver): the lessons' browser test will skip" >&2
exit 0
