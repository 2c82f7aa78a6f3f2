# Two commands do all the set-up:  make book  (venv + execute every notebook + HTML)  and  make test.
# Everything runs in the cpu profile here; Colab users follow README.md instead.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export KBVQA_PROFILE ?= cpu
export PYTHONHASHSEED := 0
export TOKENIZERS_PARALLELISM := false
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

# pytest exits 5 when it collects nothing: say so and fail, rather than pass silently.
define run_pytest
	$(PY) -m pytest $(1); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests in '$(1)' (exit 5)"; exit 1; fi; exit $$rc
endef

.PHONY: venv book test unit book-check nbmake lint benchmarks clean help

help:
	@echo "make book   - create .venv, execute every notebook (cpu profile), build _build/html"
	@echo "make test   - unit tests, execute the book once with -W, check the built HTML"
	@echo "make nbmake NB=notebooks/00_toy_world.ipynb - execute one notebook quickly"
	@echo "make benchmarks - speed measurements, printed as ratios measured in one run"

# System packages: ROUGE-1.5.5 (the reference our ROUGE is tested against) needs Perl's XML::Parser.
SYSDEPS := $(VENV)/.sysdeps
$(SYSDEPS):
	@mkdir -p $(VENV)
	@perl -MXML::Parser -e1 2>/dev/null || { \
	  echo "installing libxml-parser-perl (for the ROUGE-1.5.5 reference)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq libxml-parser-perl; }
	touch $(SYSDEPS)

$(STAMP): pyproject.toml requirements/constraints-cpu.txt | $(SYSDEPS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c requirements/constraints-cpu.txt -e ".[cpu,book,dev]"
	@! $(PY) -m pip show torchvision >/dev/null 2>&1 || { echo "torchvision must not be installed"; exit 1; }
	touch $(STAMP)

venv: $(STAMP)

# --all re-reads (so re-executes) every page even when _build is up to date; -W turns a failed
# cell (a warning in myst-nb) into a failed build; --keep-going lists them all.
book: $(STAMP)
	$(VENV)/bin/jupyter-book build --all -W -n --keep-going .
	@test -f _build/html/index.html && echo "book: _build/html/index.html"

unit: $(STAMP)
	@$(call run_pytest,tests -m "not book")

book-check: $(STAMP)
	@export KBVQA_REQUIRE_BOOK=1; $(call run_pytest,tests -m book)

# Lint and unit tests first (fast failure), then one execution of the book, then checks on its HTML.
test: lint unit book book-check

NB ?= notebooks
nbmake: $(STAMP)
	@$(call run_pytest,--nbmake $(NB) -p no:cacheprovider)

# Speed targets live here, as ratios measured in one run (never in timed unit tests).
benchmarks: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

lint: $(STAMP)
	$(VENV)/bin/ruff check kbvqa tests benchmarks

clean:
	rm -rf _build .pytest_cache
