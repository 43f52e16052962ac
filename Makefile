# tidemark — the two commands of the README:
#   make demo   start the embedded stack (Kafka, Airflow), generate data, run the persist DAG, report
#   make test   install everything, check the style, build the docs, run the whole test suite (unit first,
#               then DAGs, integration, browser)
# Everything stateful lives under .tidemark/ (git-ignored); the venv is .venv/. The targets call the
# `tidemark` CLI (tidemark_cli/), which is also the embedded stack's only command line.

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
TIDEMARK := $(VENV)/bin/tidemark
INSTALLED := $(VENV)/.installed

.PHONY: install up down status demo incident test lint docs format unit bench bench-idle bench-persist bench-alignment clean

# Reinstall only when the dependency list changes. pip installs with --no-compile (it would
# byte-compile every module in one process: 91 s instead of 57 s, 2026-11-28); compileall then does
# it on every core. Python would cache a module's bytecode at its first import, but not where
# PYTHONDONTWRITEBYTECODE is set (these machines and many images set it): there every process
# compiled again what it imported, importing great_expectations took 14.2 s instead of 7.0 s, and
# the suite starts hundreds of processes (quality runs, spark-submit drivers, Airflow's services).
$(INSTALLED): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "tidemark needs Python 3.11: '$(PYTHON)' was not found (set PYTHON=/path/to/python3.11)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile -e '.[test,docs]'
	$(PY) -m compileall -q -j 0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
	touch $(INSTALLED)

# Spark's Python workers would import pyspark from its zip, compiling it in every one of them:
# a .pth file in the venv points them at the compiled package (stack/compiled_pyspark.py).
install: $(INSTALLED)
	$(PY) -m stack.compiled_pyspark
	$(TIDEMARK) jars

up: install
	$(TIDEMARK) up

# Without install: stopping needs nothing new, and a checkout never installed has nothing running.
down:
	@test ! -x $(TIDEMARK) || $(TIDEMARK) down

status:
	$(TIDEMARK) services

demo: install
	$(TIDEMARK) demo

# On the stack `make demo` left running: a partition stalls, a person is told, recovery puts it right.
incident: install
	$(TIDEMARK) demo --incident

# Unit tests first and alone (a failure stops there, within a minute; on TEST_WORKERS processes
# too: they are hermetic, and one process took 44 s on CI where two take under 30), then the
# services' tests on TEST_WORKERS processes, one test file at a time each (pytest-xdist --dist loadfile: a file's
# module fixtures stay in one process; each process starts its own broker, S3 and Spark). The
# service tests mostly wait on JVMs, brokers and Airflow, so two workers share 2 cores well.
# Each test's time kept in a file.
TEST_WORKERS ?= 2
test: install lint docs
	$(PY) -m pytest tests/unit -n $(TEST_WORKERS) --junitxml=.tidemark/test-results/unit.xml
	$(PY) -m pytest tests --ignore=tests/unit -n $(TEST_WORKERS) --dist loadfile --junitxml=.tidemark/test-results/services.xml

# The style, written down in pyproject.toml ([tool.ruff]): the layout and the lint rules; seconds.
lint: install
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

# The documentation site (mkdocs.yml, docs/) into .tidemark/site/; --strict turns every warning,
# a broken internal link or anchor among them, into a failure. Seconds; needs the venv, not the jars.
docs: $(INSTALLED)
	$(VENV)/bin/mkdocs build --strict --site-dir .tidemark/site

# Lay the code out and apply the safe lint fixes, before a commit.
format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

unit: install
	$(PY) -m pytest tests/unit

# Benchmarks by scenario (make bench SCENARIO=idle); results in benchmarks/results/.
#   catch_up (default): tidemark vs Spark's own Kafka source, read and write ceilings,
#            sparse backlogs, memory, continuous latency (catch_up_side_by_side.*)
#   idle:    what an idle stream's scheduled runs cost, wall and CPU-seconds per run
#            and per hour (idle_cost.json)
SCENARIO ?= catch_up
BENCH_catch_up := benchmarks/catch_up_side_by_side.py
BENCH_idle := benchmarks/idle_cost.py
bench: install
	@test -n "$(BENCH_$(SCENARIO))" || { echo "make bench: no scenario '$(SCENARIO)' (scenarios: catch_up, idle)"; exit 2; }
	$(PY) $(BENCH_$(SCENARIO))

bench-idle:
	$(MAKE) bench SCENARIO=idle

bench-persist: install
	$(PY) benchmarks/persist_throughput.py

bench-alignment: install
	$(PY) benchmarks/alignment_side_by_side.py --scale 1
	$(PY) benchmarks/alignment_side_by_side.py --scale 4

# Stops the services and deletes all local state (broker data, lake, Airflow database).
clean: down
	rm -rf .tidemark/kafka .tidemark/airflow .tidemark/lake .tidemark/checkpoints
