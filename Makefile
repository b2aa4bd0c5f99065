# storelens — the two commands that matter on a fresh machine are `make demo` and `make test`.
# Both install what is missing (`make deps`) and build first.

SWIFT ?= swift
CONFIG ?= debug
BIN := .build/$(CONFIG)/storelens
DEMO_STORE := Fixtures/demo-container/Library/Application Support/default.store

.PHONY: all deps build release test demo fixtures bench clean help

all: build

help:
	@echo "make demo     install dependencies, build, and inspect the bundled sample container"
	@echo "make test     install dependencies, build, and run every test"
	@echo "make bench    measure storelens against the reference tools (writes docs/performance.md)"
	@echo "make fixtures regenerate Fixtures/ with the store builder"

# Installs the system libraries (and the sqlite3/bsdtar tools the tests compare against) when missing.
deps:
	@./scripts/install-deps.sh

build: deps
	$(SWIFT) build -c $(CONFIG)

release:
	$(MAKE) build CONFIG=release

test: deps
	$(SWIFT) build
	$(SWIFT) test

fixtures: build
	rm -rf Fixtures/demo-container
	.build/$(CONFIG)/storelens-fixtures Fixtures

demo: build
	@test -f "$(DEMO_STORE)" || .build/$(CONFIG)/storelens-fixtures Fixtures
	@echo '$$ storelens inspect "$(DEMO_STORE)"'
	@$(BIN) inspect "$(DEMO_STORE)"

bench: deps
	$(SWIFT) build -c release
	./scripts/bench.sh

clean:
	rm -rf .build
