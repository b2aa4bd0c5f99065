#!/usr/bin/env bash
# `make deb`: the release archive of `make dist` as a Debian package, dist/storelens_VERSION_ARCH.deb:
# the binary in /usr/bin, the man pages (gzipped) in /usr/share/man/man1, the completions where
# bash-completion, zsh and fish look for them, the licence as /usr/share/doc/storelens/copyright,
# the JSON Schemas in /usr/share/storelens/schemas.
# Depends names the packages that hold the shared libraries the binary loads, found from the binary
# (readelf's NEEDED entries, then dpkg -S for the file the loader would use), never typed by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in dpkg-deb dpkg readelf ldconfig gzip; do
    command -v "$tool" >/dev/null || { echo "make deb: $tool is missing (a Debian or Ubuntu system builds the package)" >&2; exit 1; }
done
version=$(sed -n 's/^ *static let version = "\([^"]*\)".*/\1/p' Sources/storelens/CLI/RootCommand.swift)
name="storelens-$version-linux-$(uname -m)"
archive="dist/$name.tar.gz"
[ -f "$archive" ] || { echo "make deb: $archive is missing; run make dist first (make deb does)" >&2; exit 1; }
arch=$(dpkg --print-architecture)

stage=$(mktemp -d "${TMPDIR:-/tmp}/storelens-deb-stage-XXXXXX")
trap 'rm -rf "$stage"' EXIT
tar -C "$stage" -xzf "$archive"
unpacked="$stage/$name"
(cd "$unpacked" && sha256sum --quiet -c SHA256SUMS) || { echo "make deb: $archive does not match its SHA256SUMS" >&2; exit 1; }
root="$stage/root"
install -D -m 0755 "$unpacked/storelens" "$root/usr/bin/storelens"
for page in "$unpacked"/man/man1/*.1; do
    install -D -m 0644 "$page" "$root/usr/share/man/man1/$(basename "$page")"
    gzip -9n "$root/usr/share/man/man1/$(basename "$page")"
done
install -D -m 0644 "$unpacked/completions/storelens.bash" "$root/usr/share/bash-completion/completions/storelens"
install -D -m 0644 "$unpacked/completions/_storelens" "$root/usr/share/zsh/vendor-completions/_storelens"
install -D -m 0644 "$unpacked/completions/storelens.fish" "$root/usr/share/fish/vendor_completions.d/storelens.fish"
# Debian's machine-readable copyright file: the Apache-2.0 text is the system's own
# (/usr/share/common-licenses), not a copy. A native package's changelog, dated by the commit.
maintainer="storelens developers <storelens@users.noreply.github.com>"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
install -d "$root/usr/share/doc/storelens"
cat > "$root/usr/share/doc/storelens/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: storelens
Upstream-Contact: $maintainer

Files: *
Copyright: $(date -u -d "@$SOURCE_DATE_EPOCH" +%Y) storelens developers
License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may not use
 this software except in compliance with the License.
 .
 On Debian systems, the full text of the Apache License, Version 2.0 can be
 found in /usr/share/common-licenses/Apache-2.0.
COPYRIGHT
chmod 0644 "$root/usr/share/doc/storelens/copyright"
cat > "$root/usr/share/doc/storelens/changelog" <<CHANGELOG
storelens ($version) unstable; urgency=medium

  * Release $version: see /usr/share/doc/storelens (the user documentation).

 -- $maintainer  $(LC_ALL=C date -u -R -d "@$SOURCE_DATE_EPOCH")
CHANGELOG
gzip -9n "$root/usr/share/doc/storelens/changelog"
chmod 0644 "$root/usr/share/doc/storelens/changelog.gz"
# The user documentation, where the man pages cite it.
for doc in "$unpacked"/docs/*.md; do
    install -D -m 0644 "$doc" "$root/usr/share/doc/storelens/$(basename "$doc")"
done
for schema in "$unpacked"/schemas/*.schema.json; do
    install -D -m 0644 "$schema" "$root/usr/share/storelens/schemas/$(basename "$schema")"
done

# The package of each library the binary loads, as the loader resolves it on this system.
# The cache is read once into a variable: awk stopping early on a pipe from ldconfig would kill
# ldconfig with SIGPIPE, and pipefail turns that into a failed build on machines with a large cache.
loader_cache=$(ldconfig -p)
depends=()
for library in $(readelf -d "$root/usr/bin/storelens" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$(awk -v lib="$library" '$1 == lib && /x86-64|AArch64|aarch64/ && !found {print $NF; found = 1}' <<<"$loader_cache")
    [ -n "$path" ] || path=$(awk -v lib="$library" '$1 == lib && !found {print $NF; found = 1}' <<<"$loader_cache")
    [ -n "$path" ] || { echo "make deb: the loader does not know $library" >&2; exit 1; }
    owner=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path" 2>/dev/null) || { echo "make deb: no package holds $path" >&2; exit 1; }
    depends+=("${owner%%:*}")
done
depends_line=$(printf '%s\n' "${depends[@]}" | sed 's/:.*//' | LC_ALL=C sort -u | paste -sd, - | sed 's/,/, /g')

mkdir -p "$root/DEBIAN"
installed_kb=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<CONTROL
Package: storelens
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_kb
Depends: $depends_line
Section: utils
Priority: optional
Description: inspect, audit and repair Core Data and SwiftData stores of iOS and macOS apps
 Reads the data stores of iOS and macOS apps copied off a device
 (containers, .xcappdata, tar and zip archives, Finder/iTunes backups)
 without changing them: what the Core Data or SwiftData store holds,
 what lives only in the -wal, what was deleted and can be recovered,
 whether a migration lost records, and checks and safe repairs of
 Core Data's invariants.
CONTROL
# Every file's MD5, as dpkg --verify reads them.
(cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum > DEBIAN/md5sums)
chmod 0644 "$root/DEBIAN/md5sums"
mkdir -p dist
deb="dist/storelens_${version}_${arch}.deb"
rm -f "$deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
(cd dist && sha256sum "$(basename "$deb")" > "$(basename "$deb").sha256")
echo "make deb: $deb ($(du -h "$deb" | cut -f1)); Depends: $depends_line"
