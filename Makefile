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

.PHONY: venv lab demo release test clean bench-checks

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

lab: $(STAMP)  ## learners: JupyterLab on course/ with the nbgrader extension
	$(BIN)/python -m coursetools.lab $(LAB_ARGS)

demo: $(STAMP)  ## instructors: release, grade the example submissions, report
	$(BIN)/python -m autograder.demo

bench-checks: $(STAMP)  ## seconds per exercise for the checks of notebook 03 (one CPU thread)
	$(BIN)/python -m benchmarks.checks 03-custom-functions

release: $(STAMP)  ## regenerate course/ from solutions/
	$(BIN)/python -m autograder.release

test: $(STAMP)  ## the whole test suite (CI runs this)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf build .grading .pytest_cache
