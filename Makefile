# StoreMind: two commands. `make run` serves the product; `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
# One embedding thread per process (storemind/settings.py pins it as well).
export SM_EMBED_THREADS ?= 1

.PHONY: run test install lint bench-ops browser-deps

$(STAMP): requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $(STAMP)

install: $(STAMP)

run: install
	SM_DEMO=1 $(BIN)/python manage.py bootstrap --host http://$(HOST):$(PORT)
	SM_DEMO=1 exec $(BIN)/python manage.py runserver --noreload $(HOST):$(PORT)

test: install browser-deps
	$(BIN)/python -m pytest

# Browser tests drive Debian's Chromium (no browser download). Installed when missing and
# we can (root with apt-get); otherwise the browser tests skip and say why.
browser-deps:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian chromium and fonts-noto-cjk for the browser tests"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-noto-cjk >/dev/null) \
	      || echo "could not install chromium: browser tests will be skipped"; \
	  else echo "no /usr/bin/chromium and no root apt-get: browser tests will be skipped"; fi; \
	fi

lint: install
	$(BIN)/ruff check .

bench-ops: install
	$(BIN)/python manage.py bench ops
