# Canopy's two commands: `make demo` (TPC-H end to end; SF=1 for a bigger run) and `make test`.
# Everything runs in .venv, created and filled on first use; stamps keep later runs from reinstalling.

PYTHON  ?= python3
SF      ?= 0.1
VENV    := .venv
PY      := $(VENV)/bin/python
# Re-install when the declared dependencies change; rebuild kernels when their sources change.
INSTALL_STAMP := $(VENV)/.canopy-installed
KERNEL_STAMP  := build/.canopy-kernels
KERNEL_SOURCES := $(wildcard kernels/*.pyx kernels/*.pxd kernels/src/*.h kernels/src/*.c) setup.py

.PHONY: venv kernels system-packages demo test test-ray test-slow test-mariadb bench bench-peers clean distclean

venv: $(INSTALL_STAMP) $(KERNEL_STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)

# setup.py imports Cython and numpy, and the editable install runs without build isolation (so the
# kernels build against the venv's numpy): the build requirements go in first. The "python3"
# kernelspec installed into the venv makes Jupyter started from the venv run this interpreter.
# pip's per-package lines go to .venv/install.log (shown when a step fails); the terminal gets one line a
# step with its time. The editable install declares no extensions (CANOPY_SKIP_KERNELS): the kernels are
# compiled once, by the next rule.
$(INSTALL_STAMP): $(PY) pyproject.toml setup.py
	@echo "canopy: installing build tools and dependencies into $(VENV) (log: $(VENV)/install.log) ..."
	@start=$$(date +%s); \
	{ $(PY) -m pip install -q --disable-pip-version-check "setuptools>=68" wheel "Cython>=3.0" "numpy>=1.26" && \
	  CANOPY_SKIP_KERNELS=1 $(PY) -m pip install -q --disable-pip-version-check --no-build-isolation -e ".[test,bench]" && \
	  $(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (canopy .venv)"; \
	} > $(VENV)/install.log 2>&1 || { tail -40 $(VENV)/install.log; echo "canopy: install failed (full log: $(VENV)/install.log)"; exit 1; }; \
	echo "canopy: dependencies installed in $$(( $$(date +%s) - start )) s"
	@touch $@

$(KERNEL_STAMP): $(INSTALL_STAMP) $(KERNEL_SOURCES)
	@echo "canopy: compiling the Cython kernels (log: build/kernels.log) ..."
	@mkdir -p $(dir $@)
	@start=$$(date +%s); \
	$(PY) setup.py -q build_ext --inplace > build/kernels.log 2>&1 || { tail -40 build/kernels.log; echo "canopy: kernel build failed (full log: build/kernels.log)"; exit 1; }; \
	echo "canopy: kernels compiled in $$(( $$(date +%s) - start )) s"
	@touch $@

kernels: $(KERNEL_STAMP)

demo: venv
	$(PY) -m engine.demo --sf $(SF)

# Debian programs the tests use when present (tests that need one skip cleanly without it): Graphviz's
# dot draws EXPLAIN pictures. Installed only where we are root with apt-get (CI); elsewhere a note.
SYSTEM_PROGRAMS := dot:graphviz
system-packages:
	@missing=""; for pair in $(SYSTEM_PROGRAMS); do command -v $${pair%%:*} >/dev/null || missing="$$missing $${pair#*:}"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "canopy: apt-get install$$missing ..."; mkdir -p build; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; } > build/apt.log 2>&1 \
	    || echo "canopy: apt-get failed (build/apt.log); the tests that need$$missing will skip"; \
	else echo "canopy: not installed:$$missing (tests that need them skip)"; fi

# The default suite on the embedded runner, then the SQL, DB-API and TPC-H suites again with every
# leaf a Ray actor on a local Ray (same answers expected from both runners).
test: venv system-packages
	$(PY) -m pytest -q
	$(MAKE) --no-print-directory test-ray

test-ray: venv
	CANOPY_RUNNER=ray $(PY) -m pytest -q tests/sql tests/tpch tests/dbapi tests/test_semantics.py

test-slow: venv
	$(PY) -m pytest -q -m slow

# MariaDB as the oracle of MySQL semantics (tests/sql/test_mariadb_oracle.py); mariadb-server is
# installed when missing and we are root, otherwise the tests skip.
test-mariadb: venv
	@command -v mariadbd >/dev/null || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || \
	  { mkdir -p build; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server > build/apt-mariadb.log 2>&1 \
	    || echo "canopy: apt-get install mariadb-server failed (build/apt-mariadb.log)"; }
	$(PY) -m pytest -q -m mariadb

bench: venv
	$(PY) -m benchmarks.tpch --sf 1

# Seed workloads a-f (../shared/bench/WORKLOADS.md) against DuckDB, Polars, DataFusion and chDB.
bench-peers: venv
	$(PY) -m pip install --no-build-isolation -e ".[peers]"
	$(PY) -m benchmarks.seed

clean:
	rm -rf build .pytest_cache .hypothesis .asv kernels/*.so kernels/*.c kernels/*.cpp
	find . -name __pycache__ -type d -not -path "./$(VENV)/*" -prune -exec rm -rf {} +
	rm -f $(INSTALL_STAMP)

# Also the virtual environment and the generated TPC-H data.
distclean: clean
	rm -rf $(VENV) .data
