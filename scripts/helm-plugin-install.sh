#!/bin/sh
# Install/update hook of the `helm drift` plugin (plugin.yaml runs it as `sh THIS install|update`).
# Puts kubectl-drift and kubectl_complete-drift into $HELM_PLUGIN_DIR/bin, taken from the first of:
#   1. HELM_DRIFT_ARCHIVE=/path/to/kubectl-drift_<version>_<os>_<arch>.tar.gz (offline); checked
#      against /path/to/<archive>.sha256 when that file sits next to it;
#   2. the release archive for this OS and architecture, downloaded from
#      $HELM_DRIFT_RELEASES_URL/v<version>/ and checked against the .sha256 published with it;
#   3. `cargo build --release --locked`, when the plugin directory is a kubectl-drift source
#      checkout and cargo is installed (HELM_DRIFT_BUILD=1 skips the download and goes here).
# Fails with what it tried when none of these works.
#
# A plugin installed from the release's Helm plugin package (drift-<version>.tgz, whose .prov Helm 4
# verifies) carries checksums.sha256, the sha256 of every release archive: an archive from 1. or
# 2. must then be listed there with the same sha256, so the signature covers the binary too.
#
# `helm plugin install DIR` only links DIR into Helm's plugin directory. This hook replaces that
# link with a copy of the few files the plugin needs plus bin/, so DIR is never written to and
# `helm plugin uninstall drift` removes everything the install made.
set -eu

NAME=kubectl-drift
COMPLETE_NAME=kubectl_complete-drift
DEFAULT_RELEASES_URL=https://github.com/kubectl-drift/kubectl-drift/releases/download

say() { printf 'helm drift: %s\n' "$*"; }
die() {
  printf 'helm drift: error: %s\n' "$*" >&2
  exit 1
}

event=${1:-install}
case $event in install | update) ;; *) die "unknown hook event '$event' (expected install or update)" ;; esac
[ -n "${HELM_PLUGIN_DIR:-}" ] || die "HELM_PLUGIN_DIR is not set: this script is run by 'helm plugin install' and 'helm plugin update'"
plugin_dir=${HELM_PLUGIN_DIR%/}
[ -f "$plugin_dir/plugin.yaml" ] || die "$plugin_dir/plugin.yaml not found: HELM_PLUGIN_DIR is not the drift plugin"
version=$(sed -n 's/^version:[[:space:]]*//p' "$plugin_dir/plugin.yaml" | tr -d "\"' \r" | head -n 1)
[ -n "$version" ] || die "no version in $plugin_dir/plugin.yaml"
# The real directory behind the plugin directory (a local directory install is a link to it).
src_dir=$(cd "$plugin_dir" && pwd -P)

# Scratch space next to the plugin directory, so the final moves stay on one file system.
work=$(mktemp -d "$(dirname "$plugin_dir")/.drift-$event.XXXXXX") || die "cannot create a scratch directory next to $plugin_dir"
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM HUP
new_bin=$work/bin
mkdir "$new_bin"

# --- helpers ------------------------------------------------------------------------------------

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d ' ' -f 1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d ' ' -f 1
  elif command -v openssl >/dev/null 2>&1; then
    openssl dgst -sha256 "$1" | sed 's/^.*= *//'
  else
    die "cannot check $1: none of sha256sum, shasum or openssl is installed"
  fi
}

# verify ARCHIVE SHA256_FILE: stop unless the archive's sha256 is the one the file names.
verify() {
  expected=$(awk 'NR == 1 { print tolower($1) }' "$2")
  case $expected in
    *[!0-9a-f]* | "") die "$2 does not hold a sha256 (expected 64 hex digits first)" ;;
  esac
  [ ${#expected} -eq 64 ] || die "$2 does not hold a sha256 (expected 64 hex digits first)"
  actual=$(sha256_of "$1")
  [ "$actual" = "$expected" ] || die "sha256 of $1 is $actual but $2 says $expected: refusing to install it"
  say "sha256 of $(basename "$1") checked"
}

# verify_signed ARCHIVE: when the plugin carries checksums.sha256 (the signed plugin package),
# stop unless ARCHIVE is listed there under its own name with the same sha256.
verify_signed() {
  [ -f "$plugin_dir/checksums.sha256" ] || return 0
  listed=$(awk -v f="$(basename "$1")" '$2 == f || $2 == "*" f { print tolower($1); exit }' "$plugin_dir/checksums.sha256")
  [ -n "$listed" ] || die "$(basename "$1") is not listed in the plugin's checksums.sha256: refusing to install it"
  actual=$(sha256_of "$1")
  [ "$actual" = "$listed" ] || die "sha256 of $1 is $actual but the plugin's checksums.sha256 says $listed: refusing to install it"
  say "sha256 of $(basename "$1") matches the plugin's checksums.sha256"
}

# unpack ARCHIVE: the binary and the completion helper from a release archive into $new_bin.
unpack() {
  mkdir "$work/unpacked"
  tar -xzf "$1" -C "$work/unpacked" || die "cannot unpack $1 (expected a $NAME release .tar.gz)"
  [ -f "$work/unpacked/$NAME" ] || die "$1 has no $NAME in it (expected a $NAME release .tar.gz)"
  cp "$work/unpacked/$NAME" "$new_bin/$NAME"
  if [ -f "$work/unpacked/$COMPLETE_NAME" ]; then
    cp "$work/unpacked/$COMPLETE_NAME" "$new_bin/$COMPLETE_NAME"
  fi
  rm -rf "$work/unpacked"
}

fetch() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --connect-timeout 10 -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -T 10 -O "$2" "$1"
  else
    return 127
  fi
}

platform() {
  case $(uname -s) in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    *) os=$(uname -s | tr '[:upper:]' '[:lower:]') ;;
  esac
  case $(uname -m) in
    x86_64 | amd64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    armv6* | armv7* | arm) arch=arm ;;
    i386 | i486 | i586 | i686) arch=386 ;;
    *) arch=$(uname -m) ;;
  esac
}

download_error="the release archive was not tried (HELM_DRIFT_BUILD=1)"
try_download() {
  platform
  file=${NAME}_${version}_${os}_${arch}.tar.gz
  url=${HELM_DRIFT_RELEASES_URL:-$DEFAULT_RELEASES_URL}
  url=${url%/}/v$version/$file
  if ! command -v curl >/dev/null 2>&1 && ! command -v wget >/dev/null 2>&1; then
    download_error="cannot download $url: neither curl nor wget is installed"
    return 1
  fi
  say "downloading $url"
  if ! fetch "$url" "$work/$file"; then
    download_error="downloading $url failed"
    return 1
  fi
  if ! fetch "$url.sha256" "$work/$file.sha256"; then
    download_error="downloading $url.sha256 failed, so the archive cannot be checked"
    return 1
  fi
  verify "$work/$file" "$work/$file.sha256"
  verify_signed "$work/$file"
  unpack "$work/$file"
}

build_error=""
try_build() {
  if ! grep -q '^name = "kubectl-drift"' "$src_dir/Cargo.toml" 2>/dev/null; then
    build_error="$src_dir is not a kubectl-drift source checkout (no Cargo.toml), so it cannot be built from source"
    return 1
  fi
  if ! command -v cargo >/dev/null 2>&1; then
    build_error="$src_dir is a source checkout but cargo is not installed (install Rust to build it)"
    return 1
  fi
  say "building from source in $src_dir (cargo build --release --locked; this takes a few minutes)"
  (cd "$src_dir" && cargo build --release --locked) || die "cargo build --release --locked failed in $src_dir"
  built=${CARGO_TARGET_DIR:-$src_dir/target}/release/$NAME
  [ -f "$built" ] || die "cargo build finished but $built is not there"
  cp "$built" "$new_bin/$NAME"
  cp "$src_dir/scripts/$COMPLETE_NAME" "$new_bin/$COMPLETE_NAME"
}

# --- get the binary -----------------------------------------------------------------------------

if [ -n "${HELM_DRIFT_ARCHIVE:-}" ]; then
  [ -f "$HELM_DRIFT_ARCHIVE" ] || die "HELM_DRIFT_ARCHIVE=$HELM_DRIFT_ARCHIVE: no such file"
  if [ -f "$HELM_DRIFT_ARCHIVE.sha256" ]; then
    verify "$HELM_DRIFT_ARCHIVE" "$HELM_DRIFT_ARCHIVE.sha256"
  else
    say "no $HELM_DRIFT_ARCHIVE.sha256 next to the archive: its sha256 is not checked"
  fi
  verify_signed "$HELM_DRIFT_ARCHIVE"
  say "installing from $HELM_DRIFT_ARCHIVE"
  unpack "$HELM_DRIFT_ARCHIVE"
elif [ "${HELM_DRIFT_BUILD:-}" != 1 ] && try_download; then
  :
elif try_build; then
  :
else
  die "cannot install $NAME $version:
  - HELM_DRIFT_ARCHIVE is not set (set it to a downloaded ${NAME}_${version}_<os>_<arch>.tar.gz to install offline);
  - $download_error;
  - $build_error.
Fix one of these, then run: helm plugin uninstall drift; and install the plugin again."
fi

chmod 755 "$new_bin"/*
if ! got=$("$new_bin/$NAME" --version 2>&1); then
  die "the $NAME binary does not run on this machine ($(uname -s) $(uname -m)): $got"
fi
case $got in
  *" $version "* | *" $version") ;;
  *) say "warning: the plugin is version $version but the binary says: $got" ;;
esac

# --- put it in place ----------------------------------------------------------------------------

if [ -L "$plugin_dir" ]; then
  # A local directory install: turn Helm's link into a copy that owns its bin/.
  copy=$work/plugin
  mkdir -p "$copy/scripts"
  cp "$src_dir/plugin.yaml" "$copy/plugin.yaml"
  cp "$src_dir/scripts/helm-plugin-install.sh" "$copy/scripts/helm-plugin-install.sh"
  if [ -f "$src_dir/plugin.complete" ]; then
    cp "$src_dir/plugin.complete" "$copy/plugin.complete"
    chmod 755 "$copy/plugin.complete"
  fi
  for f in LICENSE README.md checksums.sha256; do
    if [ -f "$src_dir/$f" ]; then cp "$src_dir/$f" "$copy/$f"; fi
  done
  mv "$new_bin" "$copy/bin"
  rm "$plugin_dir"
  mv "$copy" "$plugin_dir"
  say "copied the plugin from $src_dir (which is not used after this)"
else
  mkdir -p "$plugin_dir/bin"
  for f in "$new_bin"/*; do
    mv -f "$f" "$plugin_dir/bin/"
  done
  if [ -f "$plugin_dir/plugin.complete" ]; then chmod 755 "$plugin_dir/plugin.complete"; fi
fi
say "$event done: $got in $plugin_dir/bin"
