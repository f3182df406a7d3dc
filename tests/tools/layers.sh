#!/usr/bin/env bash
# tests/tools/layers.sh — the layers hold (docs/ARCHITECTURE.md): every #include "dir/..." of a
# file under src/ names its own folder or one below it; public headers (include/duet/) include
# only public headers; compat/ includes only public headers and names no duet_dev_detail.
# Prints each forbidden edge (file, line, what it includes) and exits 1 when there is one. A file directly in src/ (the wiring of
# backends into the layers' tables, src/duet_backends.c) stands above every layer.
#
# Edges listed in tests/tools/layers_known.txt ("FILE INCLUDE", one per line: those the work
# of issue 19 items 1 and 2 still has to remove) are printed as known and do not fail; a listed
# edge that no longer exists fails too, so the list only shrinks, exactly as the code does.
#
#   tests/tools/layers.sh [SOURCE_ROOT]
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 2
known_file=tests/tools/layers_known.txt
known=$(grep -vE '^[[:space:]]*(#|$)' "$known_file" 2>/dev/null || true)
seen=""

# the order of the folders of src/, lowest first; a folder may include its own and lower ones.
# cuda is a backend: it plugs in from above (tables), so nothing below includes it.
rank() {
    case $1 in
        util) echo 0 ;; boot) echo 1 ;; tport) echo 2 ;; heap) echo 3 ;; proxy) echo 4 ;;
        core) echo 5 ;; rma) echo 6 ;; coll) echo 7 ;; cuda) echo 8 ;;
        duet) echo -1 ;;   # the public headers: anyone may include them
        *) echo "" ;;
    esac
}

bad=0
edge() {
    if printf '%s\n' "$known" | grep -qxF "$1 $3"; then
        echo "known: $1:$2 includes \"$3\" ($4)"
        seen="$seen$1 $3"$'\n'
        return
    fi
    echo "forbidden: $1:$2 includes \"$3\" ($4)"
    bad=1
}

while IFS=: read -r file line inc; do
    [ "$(dirname "$file")" = src ] && continue # src/duet_backends.c: the wiring, above every layer
    from=$(echo "$file" | cut -d/ -f2)
    to=${inc%%/*}
    rf=$(rank "$from") rt=$(rank "$to")
    if [ -z "$rf" ]; then edge "$file" "$line" "$inc" "folder src/$from has no place in the layer order"; continue; fi
    [ -z "$rt" ] && [ "$inc" = "${inc#*/}" ] && continue   # a header of the same folder, by bare name
    if [ -z "$rt" ]; then edge "$file" "$line" "$inc" "no layer named $to"; continue; fi
    [ "$rt" -le "$rf" ] || edge "$file" "$line" "$inc" "src/$from may not include the layer above it, src/$to"
done < <(grep -rnoE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[^"]+"' src --include='*.c' --include='*.h' \
             --include='*.cu' --include='*.cuh' | sed -E 's/#[[:space:]]*include[[:space:]]+"([^"]+)"/\1/; s/:[[:space:]]*/:/2')

# public headers include only public headers; compat/ its own headers and public ones, never
# the library's internals (a folder of src/)
while IFS=: read -r file line inc; do
    case $file:$inc in
        include/*:duet/*) ;;
        include/*:*) edge "$file" "$line" "$inc" "a public header includes only public headers (duet/...)" ;;
        compat/*:*) r=$(rank "${inc%%/*}")
                    [ "$inc" != "${inc#*/}" ] && [ -n "$r" ] && [ "$r" -ge 0 ] &&
                        edge "$file" "$line" "$inc" "compat/ uses public headers, not the library's src/${inc%%/*}" ;;
    esac
done < <(grep -rnoE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[^"]+"' include compat --include='*.c' --include='*.h' \
             --include='*.cu' --include='*.cuh' --include='*.cpp' | sed -E 's/#[[:space:]]*include[[:space:]]+"([^"]+)"/\1/; s/:[[:space:]]*/:/2')

# nor the device API's internals (namespace duet_dev_detail): duet_device_util.cuh has what a
# layer on it needs
while IFS=: read -r file line _; do
    edge "$file" "$line" "duet_dev_detail" "compat/ uses the public device API, not its internals"
done < <(grep -rn 'duet_dev_detail' compat)

while IFS= read -r k; do
    [ -z "$k" ] && continue
    printf '%s' "$seen" | grep -qxF "$k" ||
        { echo "stale: $known_file lists \"$k\", an edge that no longer exists: remove the line"; bad=1; }
done <<<"$known"
[ $bad -eq 0 ] && echo "layers hold: no forbidden include edge beyond the $(printf '%s' "$seen" | grep -c .) known"
exit $bad
