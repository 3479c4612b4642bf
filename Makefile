# Every target works as the first command on a fresh clone: the virtual environment is made on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Extra arguments for `make lab`, e.g. make lab LAB_ARGS="--no-browser --port=8899"
LAB_ARGS ?=
# Extra arguments for pytest, e.g. make test PYTEST_ARGS="-k nb01 -x"
PYTEST_ARGS ?=

export PATH := $(CURDIR)/$(BIN):$(PATH)
export PYTHONWARNINGS := ignore::DeprecationWarning

.PHONY: venv lab formgrader demo release test test-fast clean bench-engine grade sandbox system-deps bench-grading bench-on-submit bench-checks check collect feedback lint hand-out pins-elsewhere

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

lab: $(STAMP)  ## learners: JupyterLab on your own copy work/ (made from course/, never overwritten), Validate, Assignments panel
	$(BIN)/python -m coursetools.lab $(LAB_ARGS)

# Extra arguments for `make formgrader`, e.g. make formgrader FORMGRADER_ARGS="--course-dir . --no-browser"
FORMGRADER_ARGS ?=
formgrader: $(STAMP)  ## instructors: formgrader on the demo's graded course (build/demo, made by `make demo` if missing)
	$(BIN)/python -m coursetools.lab --formgrader $(FORMGRADER_ARGS)

hub: $(STAMP)  ## a class on JupyterHub on this machine (deploy/jupyterhub_config.py): learners ada, ben; instructor grace
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/jupyterhub -f deploy/jupyterhub_config.py

demo: $(STAMP)  ## instructors: release, grade the example submissions, report
	$(BIN)/python -m autograder.demo

bench-checks: $(STAMP)  ## seconds per exercise for the checks of notebooks 03, 04 and 05 (one CPU thread)
	$(BIN)/python -m benchmarks.checks 03-custom-functions 04-ctx-toolbox 05-gpu-functions

release: $(STAMP)  ## regenerate course/ from solutions/
	$(BIN)/python -m autograder.release

# Grading runs learners' code under bubblewrap (the sandbox); the gradebook test also starts PostgreSQL.
# The browser tests drive Debian's chromium (Playwright's own browser download is not used); the Celery
# tests start redis-server as their broker.
# All are Debian packages: `make system-deps` installs them with apt when run as root (CI does),
# and otherwise says what to run. Without them grading still works, and says which protections are off.
SYSTEM_PACKAGES := bubblewrap postgresql chromium redis-server
# JupyterHub's proxy (`make hub`, the hub test), from npm; JupyterHub itself is pinned in requirements.txt
CHP_VERSION := 5.3.0
# Extra arguments for `make grade`, e.g. make grade ASSIGNMENT=01-reverse-accumulation GRADE_ARGS="--student ada"
ASSIGNMENT ?= 01-reverse-accumulation
GRADE_ARGS ?=

system-deps:  ## install bubblewrap (grading sandbox), PostgreSQL (gradebook test), chromium (browser tests), redis-server (Celery tests) with apt; JupyterHub's proxy with npm
	@if command -v bwrap >/dev/null 2>&1 && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && test -x /usr/bin/chromium \
		&& command -v redis-server >/dev/null 2>&1; then \
		echo "system-deps: bubblewrap, PostgreSQL, chromium and redis-server are installed"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(SYSTEM_PACKAGES); \
	else \
		echo "system-deps: not root (or no apt-get), so nothing was installed. Run: sudo apt-get install $(SYSTEM_PACKAGES)"; \
		echo "             Without bubblewrap, grading runs unsandboxed and says so; the PostgreSQL test is skipped;"; \
		echo "             without chromium, the browser tests are skipped; without redis-server, the Celery tests."; \
	fi
	@if command -v configurable-http-proxy >/dev/null 2>&1; then \
		echo "system-deps: configurable-http-proxy (JupyterHub's proxy) is installed"; \
	elif command -v npm >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		npm install -g --silent configurable-http-proxy@$(CHP_VERSION); \
	else \
		echo "system-deps: run: npm install -g configurable-http-proxy@$(CHP_VERSION) (without it, the hub test is skipped)"; \
	fi

sandbox: system-deps  ## alias: install the grading sandbox (bubblewrap)

collect: $(STAMP)  ## instructors: nbgrader collect $(ASSIGNMENT) from the exchange (.exchange/) into submitted/
	mkdir -p .exchange/revad/inbound .exchange/revad/outbound .exchange/revad/feedback
	$(BIN)/nbgrader collect $(ASSIGNMENT)

grade: $(STAMP)  ## instructors: grade submitted/*/$(ASSIGNMENT) (sandboxed, parallel, resumable)
	$(BIN)/python -m autograder grade $(ASSIGNMENT) $(GRADE_ARGS)

feedback: $(STAMP)  ## instructors: nbgrader release_feedback $(ASSIGNMENT): learners get it with "Fetch Feedback"
	$(BIN)/nbgrader release_feedback $(ASSIGNMENT)

bench-on-submit: $(STAMP)  ## grade on submit, 2 Celery workers: landing to feedback, median and slowest (notebooks 01 and 06), then a burst of 100
	$(BIN)/python -m benchmarks.on_submit --assignment 01-reverse-accumulation --n 12 --every 10 --burst 100
	$(BIN)/python -m benchmarks.on_submit --assignment 06-fused-cross-entropy --n 12 --every 10

bench-grading: $(STAMP)  ## 40 submissions of notebook 01: the course's command (2 workers) vs stock nbgrader autograde; BENCH_ARGS=--celery adds 1 and 2 Celery workers
	$(BIN)/python -m benchmarks.grading $(BENCH_ARGS)

# Tests run on every core this machine has, with one worker more than its cores (pytest-xdist; TEST_WORKERS=0: one at
# a time, in one process): many tests wait on a server or a grading run, and the extra worker keeps the cores busy
# meanwhile (2 cores: 2 workers 9 min 27 s, 3 workers 8 min 20 s, 4 workers 8 min 39 s; docs/figures.md). Tests that
# share a graded class or a server stay on one worker (tests/conftest.py groups them), the longest start first; the
# report ends with the 15 slowest tests and the total.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1) + 1 )))
PYTEST_PARALLEL = -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder --durations=15 --durations-min=1

# The suite's processes keep Python's bytecode cache (__pycache__/, ignored by git) even where the environment turns it
# off (PYTHONDONTWRITEBYTECODE=1, as in many containers): otherwise every grading worker, Celery worker and pytest
# worker compiles the course's modules again, and pytest rewrites every test module's asserts again on each run.
test test-fast: export PYTHONDONTWRITEBYTECODE =

test: $(STAMP)  ## the whole test suite (CI runs this)
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

test-fast: $(STAMP)  ## the inner loop: every test that grades no class, runs no whole notebook and starts no server
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) -m "not slow" $(PYTEST_ARGS)

# Learners off Linux install the same requirements.txt: resolved here to wheels only for macOS arm64 and Windows amd64.
# uv evaluates each environment marker for the platform it resolves for (pip's --platform evaluates them for this
# machine, and asks macOS for torch's CUDA packages). It reads the package registry; no test needs the network.
OTHER_PLATFORMS := aarch64-apple-darwin x86_64-pc-windows-msvc
pins-elsewhere: $(STAMP)  ## CI: requirements.txt resolves to wheels for macOS arm64 (14.0) and Windows amd64, Python 3.11
	@for platform in $(OTHER_PLATFORMS); do \
		MACOSX_DEPLOYMENT_TARGET=14.0 $(BIN)/uv pip compile requirements.txt --python-version 3.11 \
			--python-platform $$platform --only-binary :all: --quiet --no-header -o /dev/null || exit 1; \
		echo "pins-elsewhere: requirements.txt resolves for $$platform (wheels only)"; \
	done

lint: $(STAMP)  ## ruff (rules in pyproject.toml) and mypy on autograder/grading: zero findings (CI runs this first)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench-engine: $(STAMP)  ## time notebook 02's reference engine against PyTorch (10^4, 10^5, 10^6 nodes)
	$(BIN)/python -m benchmarks.engine

clean:
	rm -rf build .grading .pytest_cache

# Which notebook `make check` grades, e.g. make check NB=03 (default: all of them)
NB ?=
check: $(STAMP)  ## learners studying alone: grade your copy in work/ with the hidden tests (make check NB=03 for one)
	$(BIN)/python -m autograder.selfcheck $(if $(NB),--notebook $(NB))

hand-out: $(STAMP)  ## instructors: nbgrader release_assignment $(ASSIGNMENT) into the exchange (.exchange/), for learners to fetch
	mkdir -p .exchange/revad/inbound .exchange/revad/outbound .exchange/revad/feedback
	$(BIN)/nbgrader release_assignment $(ASSIGNMENT) --force
