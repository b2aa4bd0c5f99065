#!/usr/bin/env bash
# `make dist`: a release build of storelens with the Swift runtime and Foundation linked in
# (--static-swift-stdlib), so it runs without a Swift toolchain. Packs it with the licence and a
# SHA-256 file as dist/storelens-VERSION-linux-ARCH.tar.gz, with the archive's own SHA-256 beside
# it. The build has a folder of its own (.build/dist): other flags than `swift build`'s.
# The binary still needs the system libraries README.md ("A binary without a toolchain") lists.
set -euo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}

version=$(sed -n 's/^ *static let version = "\([^"]*\)".*/\1/p' Sources/storelens/CLI/RootCommand.swift)
[ -n "$version" ] || { echo "make dist: cannot read the version from Sources/storelens/CLI/RootCommand.swift" >&2; exit 1; }
# The commit is baked in as a C macro (Sources/CBuildInfo); outside git it stays "unknown".
commit=unknown
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    commit=$(git rev-parse --short=12 HEAD)
    git diff --quiet HEAD -- 2>/dev/null || commit="$commit-dirty"
fi
case "$(uname -s)" in Linux) os=linux ;; Darwin) os=macos ;; *) os=$(uname -s | tr 'A-Z' 'a-z') ;; esac
name="storelens-$version-$os-$(uname -m)"
scratch=.build/dist
flags=(-c release --static-swift-stdlib --scratch-path "$scratch" -Xcc "-DSTORELENS_COMMIT=$commit")
# Hardening a Debian package is checked for: the C shims with glibc's fortified functions, and
# every relocation resolved at load time (full RELRO, BIND_NOW).
if [ "$(uname -s)" = Linux ]; then
    flags+=(-Xcc -O2 -Xcc -D_FORTIFY_SOURCE=2 -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now)
fi

echo "make dist: building storelens $version (commit $commit), release, Swift runtime linked statically" >&2
"$swift" build "${flags[@]}" --product storelens >&2
bin="$("$swift" build "${flags[@]}" --show-bin-path)/storelens"
# scripts/test.sh runs the tests against this same binary: --build-only prints its path and stops.
if [ "${1:-}" = "--build-only" ]; then echo "$bin"; exit 0; fi

stage=$(mktemp -d "${TMPDIR:-/tmp}/storelens-dist-stage-XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
cp "$bin" "$stage/$name/storelens"
# Symbols are for debugging the build, not for running it: a third of the size.
if command -v strip >/dev/null; then strip "$stage/$name/storelens"; fi
cp LICENSE "$stage/$name/LICENSE"
# The JSON Schemas of the JSON output (docs/json-output.md), for scripts that read it: each one
# file that validates offline, the schemas it refers to embedded (scripts/bundle-schemas.py).
python3 scripts/bundle-schemas.py schemas "$stage/$name/schemas"
# The user documentation the man pages cite (the Debian package installs it as /usr/share/doc/storelens).
mkdir "$stage/$name/docs"
cp docs/*.md "$stage/$name/docs/"
# Completion scripts and man pages, made by the binary itself from its own help; dated by the
# commit (SOURCE_DATE_EPOCH) so two builds of one commit give the same pages.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
"$bin" --help >/dev/null   # the binary runs here before anything is made from it
mkdir -p "$stage/$name/completions" "$stage/$name/man/man1"
"$bin" --generate-completion-script bash > "$stage/$name/completions/storelens.bash"
"$bin" --generate-completion-script zsh > "$stage/$name/completions/_storelens"
"$bin" --generate-completion-script fish > "$stage/$name/completions/storelens.fish"
"$bin" --generate-manual > "$stage/$name/man/man1/storelens.1"
# awk reads the whole help (no early exit): a reader that stops early can kill the writer with
# SIGPIPE, which pipefail reports as a failed build.
for command in $("$bin" --help | awk '/^SUBCOMMANDS:/ {on = 1; next} on && /^$/ {on = 0} on && /^  [^ ]/ {print $1}'); do
    "$bin" --generate-manual "$command" > "$stage/$name/man/man1/storelens-$command.1"
done
(cd "$stage/$name" && find . -type f ! -name SHA256SUMS | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)
mkdir -p dist
rm -f "dist/$name.tar.gz" "dist/$name.tar.gz.sha256"
tar -C "$stage" --owner=0 --group=0 --numeric-owner --sort=name -czf "dist/$name.tar.gz" "$name"
(cd dist && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
echo "make dist: dist/$name.tar.gz ($(du -h "dist/$name.tar.gz" | cut -f1)); SHA-256 in dist/$name.tar.gz.sha256"
