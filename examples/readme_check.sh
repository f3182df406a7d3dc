#!/bin/sh
# example.readme: the README's first C block ("A first program") is examples/hello.c without
# its header comment (the lines up to the first that does not start a comment).
#     sh readme_check.sh <source dir>
set -u
src=${1:?usage: sh $0 <source dir>}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/duet-readme.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
awk '/^```c$/ { f = 1; next } /^```$/ { if (f) exit } f' "$src/README.md" >"$tmp/readme.c"
awk 'body || !/^(\/\*| \*)/ { body = 1; print }' "$src/examples/hello.c" >"$tmp/hello.c"
[ -s "$tmp/readme.c" ] || { echo "FAIL: no C block in README.md" >&2; exit 1; }
diff -u "$tmp/readme.c" "$tmp/hello.c" || { echo "FAIL: README.md's first program is not examples/hello.c" >&2; exit 1; }
echo "readme: the first program is examples/hello.c"
