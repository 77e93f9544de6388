# The two commands of the README: `make demo` (see it work) and `make test` (the test suite).
# Both install what they need into .venv first.
VENV ?= .venv
PY := $(VENV)/bin/python

CHROMIUM := /usr/bin/chromium
SUDO := $$( [ "$$(id -u)" = 0 ] || echo sudo )

.PHONY: install demo test test-fast test-setup lint bench postgresql airflow-venv docker-daemon jvm-archive \
	vendor-dashboard

# The project with pip (pyspark is a source package: pip keeps the wheel it builds and reuses
# it; uv rebuilt it on every install here, a new 0.5-1.3 GB copy in its cache each time). The
# Airflow virtualenv of the real clients' tests is installed with uv
# (tests/real_spark/clients/airflow_venv.py): its wheels are cached, ~15 s where pip took ~90 s.
# uv reads neither pip.conf nor, unless told, the platform's CA store, where a machine behind a
# TLS-intercepting proxy keeps the proxy's CA.
export UV_SYSTEM_CERTS := true

# The project's own modules are byte-compiled here, as pip does the installed packages': where
# PYTHONDONTWRITEBYTECODE is set (it is on this project's machines) nothing else writes them,
# and every process the tests start (servers, CLI calls, agents) compiled them again (an
# import of the server 1.17 -> 0.90 s CPU). An edited module is compiled again as it is read.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	$(PY) -m compileall -q sessionsched
	touch $@

install: $(VENV)/.installed

# Debian's packages, installed as root or through sudo when missing. `make -j` may run two
# installs at once, and apt-get takes one at a time (dpkg's lock): each waits for the lock
# here, so a target needs only the packages it uses (an order-only prerequisite between them
# would install the one it names too).
APT := $(SUDO) flock /tmp/sessionsched-apt.lock

# The dashboard's browser tests drive Debian's chromium (Playwright's own browser download is
# not used).
$(CHROMIUM):
	$(APT) sh -c 'apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium'

# The HTTPS test makes its certificate with openssl.
/usr/bin/openssl:
	$(APT) sh -c 'apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssl'

demo: install
	$(VENV)/bin/sessionsched demo

lint: install
	$(VENV)/bin/ruff check sessionsched tests benchmarks

# The store tests start their own PostgreSQL server from Debian's postgresql binaries
# (/usr/lib/postgresql/*/bin). Installed when missing, without the package's own "main"
# cluster (a server on port 5432 nobody asked for).
postgresql:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || $(APT) sh -c 'apt-get update -q && \
	  mkdir -p /etc/postgresql-common/createcluster.d && \
	  echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/sessionsched.conf && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql'


# Airflow (the real clients' tests run its Spark and Livy clients) in a virtualenv of its own:
# its pins conflict with ours. Kept between runs; rebuilt only when missing or when
# tests/real_spark/clients/airflow-requirements.txt changes (with uv: seconds once its cache is
# warm).
airflow-venv: install
	$(PY) -m tests.real_spark.clients.airflow_venv

# The class-data-sharing archive of Spark's classes every JVM of the tests maps
# (tests/jvm_archive.py): built once per machine, Spark and JDK into ~/.cache/sessionsched
# (2-3 min, ~1.5 min of CPU; it saves about 40 % of each Spark JVM's start), then only checked
# (~0.5 s); a new checkout's .venv gets its own, written from the class list kept (~20 s).
# When it cannot be built, one line says so and the suite runs without it.
jvm-archive: install
	$(PY) -m tests.jvm_archive

# The container tests (tests/real_spark/containers) build the images and run
# docker/compose.yaml: they need a running Docker daemon, Debian's compose (to resolve the compose
# file) and debootstrap (the base image is made locally: no image registry is reachable).
# Installed when missing, and dockerd started when none answers (in the background, logging to
# /var/log/dockerd.log; it keeps running after the tests, for the next run's image cache), as
# root or through sudo.
# When neither is possible: one line saying so, and the rest of the suite runs (the container
# tests then fail with a line of their own).
docker-daemon:
	@if docker info >/dev/null 2>&1 && command -v docker-compose >/dev/null \
	    && command -v debootstrap >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then as=""; elif sudo -n true 2>/dev/null; then as=sudo; else \
	  echo "make: Docker is not set up (a running daemon, docker-compose, debootstrap) and" \
	    "this is neither root nor sudo: tests/real_spark/containers will fail" >&2; exit 0; fi; \
	if ! command -v dockerd >/dev/null || ! command -v docker-compose >/dev/null \
	    || ! command -v debootstrap >/dev/null; then \
	  $$as flock /tmp/sessionsched-apt.lock sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -q docker.io docker-compose debootstrap' || exit 1; fi; \
	if ! docker info >/dev/null 2>&1; then \
	  $$as sh -c 'nohup setsid dockerd >/var/log/dockerd.log 2>&1 </dev/null &'; \
	  for _ in $$(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done; \
	  docker info >/dev/null 2>&1 || { echo "make: dockerd did not start:" \
	    "see /var/log/dockerd.log" >&2; exit 1; }; fi

# In TEST_WORKERS processes (pytest-xdist; 3 on this project's 2-core machines): the tests
# mostly wait (on JVMs starting, sleeping tasks, servers in child processes), so the rest of
# the suite runs beside the real-cluster tests, and a third worker fills the waits (measured
# when the suite was smaller: a clean clone's pytest 823 s against 873 with two; now 922 s
# with three against 945 with four, CPU-bound: the suite's ~1,500 CPU-seconds on two cores;
# every wait is on a condition, sized for a slow JVM start on a loaded machine). Tests on a module's fixture stay together on
# one worker; the real-cluster tests spread over all of them, each worker starting the session's
# clusters once, and go out first, the seconds-long tests last (tests/xdist_groups.py). Every
# JVM the tests start compiles with C1 only and maps the archive above (tests/conftest.py).
#
# What the suite needs is set up side by side (`-j`): the JVM archive's build (CPU) beside
# the Airflow virtualenv and the Debian packages (the network); the apt-get users one at a
# time (each waits for the others' lock: `APT`), dpkg takes one at a time.
TEST_WORKERS ?= 3
test:
	@$(MAKE) --no-print-directory -j4 --output-sync=target test-setup
	$(VENV)/bin/pytest -q -ra --durations=12 -n $(TEST_WORKERS) --dist loadgroup

test-setup: lint $(CHROMIUM) postgresql airflow-venv /usr/bin/openssl docker-daemon jvm-archive

# The developer's loop (CONTRIBUTING.md): every test that needs no Spark cluster, no Spark app,
# no Docker, no browser and no fault injected as root - the engine's tables, the doors, the
# service stepped in-process on the memory backend, servers in child processes, PostgreSQL.
# 4 min 53 s on a 2-core machine (pytest 290 s in four workers: it is CPU-bound here); `make
# test` stays the whole suite (and CI's).
FAST_TESTS := not cluster and not containers and not crashloop and not storefault and not kubelet \
	and not browser
FAST_WORKERS ?= 4
test-fast: lint postgresql /usr/bin/openssl
	$(VENV)/bin/pytest -q -ra --durations=12 -n $(FAST_WORKERS) --dist loadgroup -m "$(FAST_TESTS)"

bench: install
	for b in benchmarks/*.py; do $(PY) $$b || exit 1; done

# The dashboard's charting library, uPlot (MIT), vendored: the scheduler serves it itself (its
# pages may load nothing from elsewhere). Pinned by version and by the tarball's SHA-256; run
# again to change the version, and commit the files it writes (vendor/README.md says which).
UPLOT_VERSION := 1.6.32
UPLOT_SHA256 := 4b8a8191e425658e3ea8c8c1314b0fc679c861ee3a1af2b20c7b16ba50b5133d
DASHBOARD_VENDOR := sessionsched/doors/native/static/vendor
vendor-dashboard:
	tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent uplot@$(UPLOT_VERSION) >/dev/null && \
	  echo "$(UPLOT_SHA256)  uplot-$(UPLOT_VERSION).tgz" | sha256sum -c --quiet && \
	  tar xzf uplot-$(UPLOT_VERSION).tgz && cd $(CURDIR) && mkdir -p $(DASHBOARD_VENDOR) && \
	  cp $$tmp/package/dist/uPlot.iife.min.js $$tmp/package/dist/uPlot.min.css $(DASHBOARD_VENDOR)/ && \
	  cp $$tmp/package/LICENSE $(DASHBOARD_VENDOR)/uPlot.LICENSE && rm -rf $$tmp
