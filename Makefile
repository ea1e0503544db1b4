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
# The project's shared directory (TPC-H and TPC-DS schemas, queries, the TPC-DS generator).
SHARED  ?= $(if $(CANOPY_SHARED),$(CANOPY_SHARED),../shared)
# The TPC-DS generator (DuckDB 1.5.5 + its tpcds extension, which pins that DuckDB) in a venv of
# its own; its SF 0.1 data and DuckDB's answers are cached under .data/tpcds like TPC-H's.
TPCDS_VENV  := .venv-tpcds
TPCDS_STAMP := $(TPCDS_VENV)/.canopy-installed
TPCDS_SF01  := .data/tpcds/sf0.1/.complete

.PHONY: venv kernels lint system-packages mysqlclient tpcds-venv tpcds-data demo test test-ray test-slow test-mariadb bench bench-tpcds bench-peers clean distclean

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

$(TPCDS_STAMP): $(SHARED)/tpcds/setup.sh
	bash $(SHARED)/tpcds/setup.sh $(TPCDS_VENV)
	touch $@

tpcds-venv: $(TPCDS_STAMP)

# Generated once (about 10 s), before the suite, so the tests' own timing does not include it.
$(TPCDS_SF01): | $(INSTALL_STAMP) $(TPCDS_STAMP)
	CANOPY_SHARED=$(SHARED) $(PY) -c "from engine.workloads import tpcds; tpcds.generate(0.1, tpcds.default_cache_dir())"

tpcds-data: $(TPCDS_SF01)

demo: venv
	$(PY) -m engine.demo --sf $(SF)

# Debian programs the tests use when present (tests that need one skip cleanly without it): Graphviz's
# dot draws EXPLAIN pictures; the mysql command line (mariadb-client) and the MySQL C client library
# (libmariadb-dev, with pkg-config, to build mysqlclient) are the server's clients. Installed only where
# we are root with apt-get (CI); elsewhere a note.
SYSTEM_PROGRAMS := dot:graphviz mysql:mariadb-client mariadb_config:libmariadb-dev pkg-config:pkg-config
system-packages:
	@missing=""; for pair in $(SYSTEM_PROGRAMS); do command -v $${pair%%:*} >/dev/null || missing="$$missing $${pair#*:}"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "canopy: apt-get install$$missing ..."; mkdir -p build; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; } > build/apt.log 2>&1 \
	    || echo "canopy: apt-get failed (build/apt.log); the tests that need$$missing will skip"; \
	else echo "canopy: not installed:$$missing (tests that need them skip)"; fi

# mysqlclient (the MySQL C client's Python driver) builds against libmariadb-dev: installed when that
# builds, otherwise its tests skip.
mysqlclient: venv system-packages
	@mkdir -p build; $(PY) -c "import MySQLdb" 2>/dev/null || $(PY) -m pip install -q --disable-pip-version-check "mysqlclient>=2.2" \
	  > build/mysqlclient.log 2>&1 || echo "canopy: mysqlclient did not build (build/mysqlclient.log); its tests skip"

# The default suite on the embedded runner, then the SQL, DB-API and TPC-H suites again with every
# leaf a Ray actor on a local Ray (same answers expected from both runners), TPC-DS SF 0.1 included.
lint: venv
	$(PY) -m ruff check --quiet engine cluster kernels tests benchmarks setup.py

test: lint venv system-packages mysqlclient tpcds-data
	$(PY) -m pytest -q
	$(MAKE) --no-print-directory test-ray

test-ray: venv tpcds-data
	CANOPY_RUNNER=ray $(PY) -m pytest -q tests/sql tests/tpch tests/tpcds tests/dbapi tests/test_semantics.py

test-slow: venv tpcds-venv
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

bench-tpcds: venv tpcds-venv
	CANOPY_SHARED=$(SHARED) $(PY) -m benchmarks.tpcds --sf 1

# Seed workloads a-f (../shared/bench/WORKLOADS.md) against DuckDB, Polars, DataFusion and chDB.
bench-peers: venv
	$(PY) -m pip install --no-build-isolation -e ".[peers]"
	$(PY) -m benchmarks.seed

clean:
	rm -rf build .pytest_cache .hypothesis .asv kernels/*.so kernels/*.c kernels/*.cpp
	find . -name __pycache__ -type d -not -path "./$(VENV)/*" -prune -exec rm -rf {} +
	rm -f $(INSTALL_STAMP)

# Also the virtual environments and the generated TPC-H and TPC-DS data.
distclean: clean
	rm -rf $(VENV) $(TPCDS_VENV) .data
