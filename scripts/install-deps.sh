#!/usr/bin/env bash
# Installs what storelens needs to build and test, only when it is missing.
#   Debian/Ubuntu as root: apt-get install; macOS: prints the brew line.
set -euo pipefail

missing_pc=()
# libcrypto (OpenSSL) decrypts encrypted iOS backups (Sources/Acquisition/BackupDecryption).
for pc in sqlite3 libarchive zlib libcrypto; do
  pkg-config --exists "$pc" 2>/dev/null || missing_pc+=("$pc")
done
# ISA-L decodes the gzip layer of .tar.gz archives on Linux (Sources/Acquisition/GzipSource.swift).
# libxml2 is Foundation's XML parser on Linux (FoundationXML): Xcode models and Core Data XML
# stores are read through it, and `make dist` links it.
if [ "$(uname -s)" = Linux ]; then
  pkg-config --exists libisal 2>/dev/null || missing_pc+=(libisal)
  pkg-config --exists libxml-2.0 2>/dev/null || missing_pc+=(libxml-2.0)
fi
missing_tools=()
for tool in sqlite3 bsdtar zip bc /usr/bin/time openssl; do
  command -v "$tool" >/dev/null 2>&1 || missing_tools+=("$tool")
done
# The encrypted-backup tests make a virtualenv (python3 -m venv) for their independent writer.
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing_tools+=(python3-venv)
# The XML-store test traces the open calls with strace to show the DTD is never read (skipped without it).
# The completion scripts are run in bash, zsh and fish, and the man pages through groff's checks.
if [ "$(uname -s)" = Linux ]; then
  # lintian checks the Debian package (DebTests).
  for tool in strace zsh fish groff lintian; do
    command -v "$tool" >/dev/null 2>&1 || missing_tools+=("$tool")
  done
fi

# The browser test of `storelens report` loads reports in headless chromium. With --with-browser
# (make test) it is installed when it can be (root on Debian or Ubuntu); elsewhere the test prints
# why it is skipped. make demo and make build do not need it.
if [ "${1:-}" = "--with-browser" ] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 && ! command -v google-chrome >/dev/null 2>&1; then
  if [ "$(uname -s)" = Linux ] && [ -r /etc/debian_version ] && [ "$(id -u)" = 0 ]; then
    echo "Installing chromium for the report's browser test"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } || echo "chromium could not be installed; the browser test will be skipped"
  else
    echo "note: chromium is not installed, so the report's browser test will be skipped (Debian: sudo apt-get install chromium; macOS: brew install --cask chromium)"
  fi
fi

if [ ${#missing_pc[@]} -eq 0 ] && [ ${#missing_tools[@]} -eq 0 ]; then
  exit 0
fi

case "$(uname -s)" in
  Darwin)
    echo "storelens needs: ${missing_pc[*]} ${missing_tools[*]}"
    echo "Install them with: brew install sqlite libarchive zlib openssl@3 pkg-config python"
    echo "(and put Homebrew's openssl@3 on PKG_CONFIG_PATH: export PKG_CONFIG_PATH=\"\$(brew --prefix openssl@3)/lib/pkgconfig:\$PKG_CONFIG_PATH\")"
    exit 1
    ;;
  Linux)
    if [ -r /etc/debian_version ] && [ "$(id -u)" = 0 ]; then
      echo "Installing missing dependencies: ${missing_pc[*]} ${missing_tools[*]}"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq
      apt-get install -y -qq pkg-config libsqlite3-dev libarchive-dev zlib1g-dev libisal-dev libssl-dev libxml2-dev openssl python3-venv sqlite3 libarchive-tools zip bc time strace zsh fish groff-base lintian >/dev/null
    else
      echo "storelens needs: ${missing_pc[*]} ${missing_tools[*]}"
      echo "On Debian or Ubuntu: sudo apt-get install pkg-config libsqlite3-dev libarchive-dev zlib1g-dev libisal-dev libssl-dev libxml2-dev openssl python3-venv sqlite3 libarchive-tools zip bc time strace zsh fish groff-base lintian"
      exit 1
    fi
    ;;
esac
