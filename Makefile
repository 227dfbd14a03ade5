# The two commands a new user runs (see README): `make demo` and `make test`.
# Both create .venv and install rmqlab with everything it needs on first use.

PYTHON ?= python3
BASH   ?= bash
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test java browser lab docs bench clean-venv

# The venv is created once; a changed pyproject.toml, setup.py or C source only re-runs
# the install, which also builds the C modules (rmqlab/engine/*.c) in place (re-running
# `venv` over an environment made by another Python would break it).  setuptools>=77 in
# the venv too (the build itself gets it through build isolation), so that
# `.venv/bin/python setup.py build_ext --inplace` rebuilds a C module after an edit.
#
# The install itself is uv's (`uv pip install`, put in the venv by pip first): it fetches and
# unpacks in parallel and builds pyspark's sdist once: 34 s on a new machine where pip took
# 82 s and three times the CPU (2026-11-28, 2 cores).  --system-certs: the platform's
# certificates, as pip uses them (a registry behind a proxy of the machine's own CA).
#
# Byte-compiled at install (--compile-bytecode, as pip does by default; uv does not): where
# PYTHONDONTWRITEBYTECODE is set (CI machines often set it) no process writes a .pyc, so
# without it every process compiles every module it imports from source: 1.9 s of the
# 2.2 s `rmqlab info` took on a sample store, in each of the suite's many processes.
VENV_INSTALL = test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); \
	$(BIN)/python -m pip install --quiet --upgrade pip 'setuptools>=77' 'uv>=0.13.9' && \
	$(BIN)/uv pip install --quiet --system-certs --compile-bytecode --python $(BIN)/python -e
$(STAMP): pyproject.toml setup.py rmqlab/engine/_put.c rmqlab/engine/_group_commit.c
	$(VENV_INSTALL) '.[dev]'
	touch $(STAMP)

# Spark needs Java 17+, the RocketMQ oracle a JDK and Maven: find them, or install them
# where we can, or say what to do.
java:
	@bash scripts/ensure-java.sh

# the lessons' browser test: Debian's Chromium and its driver, installed where we can
browser:
	@bash scripts/ensure-browser.sh

demo: $(STAMP)
	$(BIN)/rmqlab demo

# A worker per core (pytest-xdist), a test file each at a time: much of the suite waits
# on JVMs, subprocesses and a Spark cluster, so a worker per core keeps them busy. The
# slowest tests are listed at the end of every run.
#
# On a new machine much of a first run is downloading: pip's packages, Debian's
# Chromium, RocketMQ's jars from Maven Central. They download side by side: the browser
# and the oracle's Maven builds (tests/oracle/harness.py) start while pip installs, and
# the tests start when the environment and the browser are there; a test that needs a
# release's build still running waits for it (each build holds its release's lock).
# The checkout's own modules are byte-compiled first (only those changed since: see the
# install's note on PYTHONDONTWRITEBYTECODE).
test: java
	@$(BASH) scripts/ensure-browser.sh & browser=$$!; \
	$(PYTHON) tests/oracle/harness.py & oracle=$$!; \
	$(MAKE) --no-print-directory $(STAMP) || { kill $$oracle; exit 1; }; \
	wait $$browser; \
	$(BIN)/python -m compileall -q -j 0 rmqlab tests scripts docs/_ext > /dev/null; \
	echo "PYSPARK_PYTHON=$(abspath $(BIN)/python) $(BIN)/python -m pytest -n auto --dist loadfile --no-loadscope-reorder --durations=25"; \
	PYSPARK_PYTHON=$(abspath $(BIN)/python) $(BIN)/python -m pytest -n auto --dist loadfile --no-loadscope-reorder --durations=25; status=$$?; \
	wait $$oracle; exit $$status

# The shipped lessons themselves, to edit and save (users run `rmqlab lab`, which copies
# them); JupyterLab refuses to run as root unless told; containers often are root
lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/ $$([ "$$(id -u)" = 0 ] && echo --allow-root)

# The documentation site, into docs/_build/html (the suite builds it too, warnings as errors),
# with the docs extra alone (Sphinx, myst-nb, the theme; PySpark, whose reference is made
# from its sources' declarations): what .readthedocs.yaml installs where the site is hosted
DOCS_STAMP := $(VENV)/.docs-stamp
$(DOCS_STAMP): pyproject.toml setup.py
	$(VENV_INSTALL) '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(BIN)/sphinx-build -W --keep-going -b html docs docs/_build/html

bench: $(STAMP)
	for b in bench/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean-venv:
	rm -rf $(VENV)
