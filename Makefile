# The two commands a new user runs (see README): `make demo` and `make test`.
# Both create .venv and install rmqlab with everything it needs on first use.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test java browser lab docs bench clean-venv

# The venv is created once; a changed pyproject.toml, setup.py or C source only re-runs
# the install, which also builds the C modules (rmqlab/engine/*.c) in place (re-running
# `venv` over an environment made by another Python would break it).  setuptools>=77 in
# the venv too (the build itself gets it through pip's build isolation), so that
# `.venv/bin/python setup.py build_ext --inplace` rebuilds a C module after an edit.
$(STAMP): pyproject.toml setup.py rmqlab/engine/_put.c rmqlab/engine/_group_commit.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip 'setuptools>=77'
	$(BIN)/python -m pip install --quiet -e '.[dev]'
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

# Two workers (pytest-xdist), a test file each at a time: much of the suite waits on
# JVMs, subprocesses and a Spark cluster, so two keep both cores busy. The slowest
# tests are listed at the end of every run.
test: $(STAMP) java browser
	PYSPARK_PYTHON=$(abspath $(BIN)/python) $(BIN)/python -m pytest -n 2 --dist loadfile --durations=25

# The shipped lessons themselves, to edit and save (users run `rmqlab lab`, which copies
# them); JupyterLab refuses to run as root unless told; containers often are root
lab: $(STAMP)
	$(BIN)/jupyter lab rmqlab/lessons/ $$([ "$$(id -u)" = 0 ] && echo --allow-root)

# The documentation site, into docs/_build/html (the suite builds it too, warnings as errors)
docs: $(STAMP)
	$(BIN)/sphinx-build -W --keep-going -b html docs docs/_build/html

bench: $(STAMP)
	for b in bench/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean-venv:
	rm -rf $(VENV)
