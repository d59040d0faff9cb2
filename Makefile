# StoreMind: `make run` serves the product, `make stop` stops it (and the embedded PostgreSQL),
# `make test` runs the whole suite, `make screenshots` regenerates docs/screenshots/.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
# One embedding thread per process (storemind/settings.py pins it as well).
export SM_EMBED_THREADS ?= 1
# A one-off batch process (bootstrap's first ingest) has the machine to itself: every core.
NPROC := $(shell nproc 2>/dev/null || echo 1)

.PHONY: run stop test fuzz screenshots install lint bench-ops browser-deps

$(STAMP): requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $(STAMP)

install: $(STAMP)

run: install
	SM_DEMO=1 SM_EMBED_THREADS=$(NPROC) $(BIN)/python manage.py bootstrap --host http://$(HOST):$(PORT)
	@# one shell: exec keeps the pid written here, so `make stop` finds the server by it
	@mkdir -p var; echo $$$$ > var/server.pid; echo "serving on http://$(HOST):$(PORT)/ (make stop stops it)"; \
	  SM_DEMO=1 exec $(BIN)/python manage.py runserver --noreload $(HOST):$(PORT)

# Stops what `make run` and `make test` leave behind: the dev server and the embedded PostgreSQL.
stop:
	@if [ -f var/server.pid ] && kill -0 "$$(cat var/server.pid)" 2>/dev/null; then \
	  kill "$$(cat var/server.pid)" && echo "stopped the server (pid $$(cat var/server.pid))"; \
	else echo "the server was not running"; fi; rm -f var/server.pid
	@if [ -x $(BIN)/python ]; then $(BIN)/python -m storemind.embedded_db stop; fi

test: install browser-deps
	$(BIN)/python -m pytest

# The README's pictures, taken by the same browser scenarios the tests run (1280×800 and 390×844).
screenshots: install browser-deps
	SM_SCREENSHOTS_DIR=docs/screenshots $(BIN)/python -m pytest -q -m browser storemind/tests/test_browser.py

# Browser tests drive Debian's Chromium (no browser download) and need a CJK font, or every
# screenshot is full of boxes. Each is installed when missing and we can (root with apt-get);
# otherwise the browser tests skip (no Chromium) or the run says the font is missing.
browser-deps:
	@missing=""; \
	[ -x /usr/bin/chromium ] || missing=" chromium"; \
	if command -v fc-list >/dev/null; then fc-list :lang=zh family | grep -q . || missing="$$missing fonts-noto-cjk"; \
	else dpkg -s fonts-noto-cjk >/dev/null 2>&1 || missing="$$missing fonts-noto-cjk"; fi; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing$$missing for the browser tests"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null) \
	      || echo "could not install$$missing: browser tests may be skipped or show boxes for Chinese"; \
	  else echo "missing$$missing and no root apt-get: browser tests may be skipped or show boxes for Chinese"; fi; \
	fi

# The API contract with many more generated requests per operation, and schemathesis's
# stateful phase (chains of calls); `make test` runs the same test with a few examples.
fuzz: install
	SM_CONTRACT_STRICT=1 SM_CONTRACT_EXAMPLES=$${SM_CONTRACT_EXAMPLES:-40} SM_CONTRACT_PHASES=examples,coverage,fuzzing,stateful \
	  $(BIN)/python -m pytest storemind/tests/test_contract.py -v

lint: install
	$(BIN)/ruff check .

bench-ops: install
	$(BIN)/python manage.py bench ops
