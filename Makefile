# storelens — the two commands that matter on a fresh machine are `make demo` and `make test`.
# Both install what is missing (`make deps`) and build first.

SWIFT ?= swift
CONFIG ?= debug
BIN := .build/$(CONFIG)/storelens
DEMO := Fixtures/demo-container
DEMO_STORE := $(DEMO)/Library/Application Support/default.store
DEMO_MANIFEST := Fixtures/demo-container.storelens.json

.PHONY: all deps test-deps build release dist deb test demo fixtures bench fuzz fuzz-long clean help

all: build

help:
	@echo "make demo     install dependencies, build, and inspect the bundled sample container"
	@echo "make test     install dependencies, build, and run every test"
	@echo "make bench    measure storelens against the reference tools (writes docs/performance.md)"
	@echo "make fuzz     run every libFuzzer target FUZZ_SECONDS (default 30) with AddressSanitizer"
	@echo "make fuzz-long  every libFuzzer target for 10 minutes (FUZZ_SECONDS=600; record the results in docs/safety.md)"
	@echo "make fixtures regenerate Fixtures/ with the store builder"
	@echo "make dist     a release binary that needs no Swift toolchain: dist/storelens-VERSION-linux-ARCH.tar.gz"
	@echo "make deb      the same as a Debian package: dist/storelens_VERSION_ARCH.deb"

# Installs the system libraries (and the sqlite3/bsdtar tools the tests compare against) when missing.
deps:
	@./scripts/install-deps.sh

# The same, plus chromium for the report's browser test (only the tests need a browser).
test-deps:
	@./scripts/install-deps.sh --with-browser

build: deps
	$(SWIFT) build -c $(CONFIG)

release:
	$(MAKE) build CONFIG=release

# The Swift runtime linked in, packed with LICENSE and SHA-256 sums (scripts/dist.sh; README, "Install").
dist: deps
	SWIFT=$(SWIFT) ./scripts/dist.sh

# The same as a Debian package (scripts/deb.sh; docs/install.md): binary, man pages, completions,
# Depends found from the binary's libraries.
deb: dist
	./scripts/deb.sh

# swift test with a TMPDIR of its own; fails when a storelens-* scratch folder is left in it.
test: test-deps
	python3 scripts/long-functions.py Sources --fail-over 100 > /dev/null || { python3 scripts/long-functions.py Sources --over 100; echo "make test: split the functions above (100 lines at most, docs/architecture.md)"; exit 1; }
	! grep -rn 'ProcessInfo.processInfo.environment\|getenv(' Sources/Reports || { echo "make test: Reports renders; the environment is read at the edge (Sources/storelens) and passed in"; exit 1; }
	! grep -rnE 'import +([a-z]+ +)?(SQLiteAccess|CSQLite|OutputFiles)([^[:alnum:]_]|$$)|FileManager|FileHandle|fopen\(|(^|[^.[:alnum:]_])open\([^)]*O_[A-Z]|Data\(contentsOf|String\(contentsOf|realpath\(|(^|[^[:alnum:]_])[lf]?stat\(|createFile\(' Sources/Reports || { echo "make test: Reports renders; SQLite and files are read and written below it (Operations, OutputFiles), called by the command, and the results passed in"; exit 1; }
	python3 scripts/suite-reach.py > /dev/null || { python3 scripts/suite-reach.py; echo "make test: move the helpers above out of their suites (docs/testing.md)"; exit 1; }
	$(SWIFT) build
	SWIFT=$(SWIFT) ./scripts/test.sh

fixtures: build
	rm -rf Fixtures/demo-container Fixtures/demo-container.storelens.json
	.build/$(CONFIG)/storelens-fixtures Fixtures

# The demo container is a to-do app's data container after a migration from a JSON file and a
# Core Data store to SwiftData. audit exits 1 because the demo has planted findings.
demo: build
	@test -f "$(DEMO_STORE)" || .build/$(CONFIG)/storelens-fixtures Fixtures
	@echo '$$ storelens scan $(DEMO)'
	@$(BIN) scan $(DEMO)
	@echo
	@echo '$$ storelens inspect $(DEMO) --store default.store'
	@$(BIN) inspect $(DEMO) --store default.store
	@echo
	@echo '$$ storelens audit $(DEMO) --manifest $(DEMO_MANIFEST)'
	@$(BIN) audit $(DEMO) --manifest $(DEMO_MANIFEST); status=$$?; test $$status -eq 1 || { echo "audit exited $$status, expected 1 (findings)"; exit 1; }

bench: deps
	$(SWIFT) build -c release
	./scripts/bench.sh

# libFuzzer targets for the readers of device bytes (scripts/fuzz.sh; Fuzz/). FUZZ_SECONDS per target.
FUZZ_SECONDS ?= 30
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) ./scripts/fuzz.sh

# The long run: every target for 10 minutes (12 targets, 2 h in all; results go in docs/safety.md).
fuzz-long: deps
	FUZZ_SECONDS=600 ./scripts/fuzz.sh

clean:
	rm -rf .build
