# Two commands do everything on a fresh machine (see README.md):
#   make book   build the published book (the full profile, its models read from store/) into
#               _build/html, executing every chapter; PROFILE=quick builds it with the quick
#               profile instead, training its models
#   make test   run the unit tests and execute every chapter under pytest (nbmake), quick profile
#   make publish  push the built book (_build/html) to the gh-pages branch of $(REMOTE) with ghp-import
# Both create a virtual environment in .venv first. Where no NVIDIA GPU is present, the
# CPU build of PyTorch is installed before the project, so pip never pulls the CUDA one.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_CPU ?= torch==2.13.0
BOOKFLAGS ?= -W --keep-going
PROFILE ?= $(or $(ATTNSINK_PROFILE),full)
STAMP := $(VENV)/.installed

REMOTE ?= origin
HTML ?= _build/html

.PHONY: book test env clean publish full-cache store-analyses status check-store

env: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then \
		echo "NVIDIA GPU found: PyTorch comes with the project (CUDA build)"; \
	else \
		echo "no NVIDIA GPU: installing the CPU build of PyTorch ($(TORCH_CPU))"; \
		$(BIN)/python -m pip install --quiet "$(TORCH_CPU)"; \
	fi
	$(BIN)/python -m pip install --quiet -e ".[book,test,dev,cluster]"
	touch $(STAMP)

book: $(STAMP)
	ATTNSINK_PROFILE=$(PROFILE) $(BIN)/jupyter-book build . $(BOOKFLAGS)

test: $(STAMP)
	ATTNSINK_PROFILE=quick $(BIN)/python -m pytest tests --nbmake book/ --nbmake-timeout=1200 --durations=10

# Every experiment's full profile, trained and put in the repository's store (store/), the
# cheapest first. On two CPU cores this takes many hours (benchmarks/RESULTS.md); what is stored
# is never trained again, so a rerun resumes, on this machine or another. `make status` says
# what is stored, missing and stale; make book then reads the store.
# The experiments come from the registry (src/attnsink/registry.py), in its order.
full-cache: $(STAMP)
	@for name in $$($(BIN)/python -m attnsink list); do \
		echo "== $$name (full profile)"; \
		$(BIN)/python -m attnsink reproduce $$name --profile full --store --progress --out results/full/$$name.json || exit 1; \
	done

# The chapters' slow analyses of the stored models (ablations, certified distances), stored
# beside them: every chapter is executed under full from an empty cache (no training: the models
# come from the store), then what it computed is kept in store/analyses/, and what it no longer
# reads (an analysis whose code changed, or that no chapter asks for) is deleted. An analysis whose
# code did not change is read from the store, not recomputed, so its file stays as it is.
store-analyses: $(STAMP)
	@d=$$(mktemp -d) && touch $$d/read && \
	ATTNSINK_PROFILE=full ATTNSINK_CACHE_DIR=$$d ATTNSINK_STORE_READS=$$d/read $(BIN)/python benchmarks/time_chapters.py && \
	$(BIN)/python -m attnsink store-analyses --cache-dir $$d --read $$d/read && rm -rf $$d

status: $(STAMP)
	$(BIN)/python -m attnsink status

# Every stored file's checksum verified; a corrupted one is named with the command that restores it.
check-store: $(STAMP)
	$(BIN)/python -m attnsink status --check

publish:
	@test -f $(HTML)/index.html || { echo "error: no built book in $(HTML): run make book first" >&2; exit 2; }
	@test -x $(BIN)/ghp-import || { echo "error: $(BIN)/ghp-import is missing: run make env" >&2; exit 2; }
	$(BIN)/ghp-import --no-jekyll --push --force --remote $(REMOTE) \
		--message "Publish the book built from $$(git rev-parse --short HEAD 2>/dev/null || echo an unknown commit)" $(HTML)

clean:
	rm -rf _build
