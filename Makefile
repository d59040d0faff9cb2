# StoreMind: two commands. `make run` serves the product; `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install lint bench-ops bench-retrieval clean-db

$(STAMP): requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $(STAMP)

install: $(STAMP)

run: install
	SM_DEMO=1 $(BIN)/python manage.py bootstrap --host http://$(HOST):$(PORT)
	SM_DEMO=1 exec $(BIN)/python manage.py runserver --noreload $(HOST):$(PORT)

test: install
	$(BIN)/python -m pytest

lint: install
	$(BIN)/ruff check .

bench-ops: install
	$(BIN)/python manage.py bench ops
