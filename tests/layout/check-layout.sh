#!/usr/bin/env bash
# Checks that the tree keeps the module map of docs/ARCHITECTURE.md:
#   1. a folder includes only headers of the folders it may depend on (and
#      nothing includes actors/ but actors/ itself);
#   2. no two module libraries call each other (a call from a lower floor
#      back into a higher one is a cycle in the symbol graph), read from the
#      static libraries of BUILD_DIR with nm;
#   3. no source file outside tests/ is over 1,000 lines.
# Usage: check-layout.sh SOURCE_DIR BUILD_DIR. Exit 0 clean, 1 with every
# violation printed.
set -u
src=${1:?usage: check-layout.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: check-layout.sh SOURCE_DIR BUILD_DIR}
fail=0

# folder -> the folders whose headers it may include
declare -A allowed=(
    [runtime]=""
    [log]="runtime"
    [proto]="runtime log"
    [replication]="runtime log proto"
    [meta]="runtime"
    [actors]="runtime log proto replication meta"
    [ctl]="runtime log proto meta ctl/lib"
    [ctl/lib]="runtime log proto ctl"
    [bench]="runtime log proto meta ctl ctl/lib"
    [examples]="ctl/lib"
)
folders="runtime log proto replication meta actors ctl ctl/lib bench examples"

# which folder owns each header name
declare -A owner=()
for f in $folders; do
    for h in "$src/$f"/*.h; do
        [ -e "$h" ] || continue
        owner[$(basename "$h")]=$f
    done
done
# libvtop's public header, included as "vtop/vtop.h" or <vtop/vtop.h>
owner[vtop/vtop.h]=ctl/lib

for f in $folders; do
    for file in "$src/$f"/*.[ch]; do
        [ -e "$file" ] || continue
        while IFS= read -r inc; do
            o=${owner[$inc]:-}
            [ -z "$o" ] || [ "$o" = "$f" ] && continue
            case " ${allowed[$f]} " in
            *" $o "*) ;;
            *)
                echo "layout: $f/$(basename "$file") includes $o/$inc: $f may depend only on: ${allowed[$f]:-nothing}"
                fail=1
                ;;
            esac
        done < <(sed -n 's/^#include ["<]\(vtop\/vtop\.h\)[">].*/\1/p; s/^#include "\([^"]*\)".*/\1/p' "$file")
    done
done

# symbol graph between the module libraries
declare -A lib=([runtime]=vt_runtime [log]=vt_log [proto]=vt_proto [replication]=vt_repl
                [meta]=vt_meta [actors]=vt_actors [ctl]=vt_client)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "${!lib[@]}"; do
    a="$build/lib/lib${lib[$f]}.a"
    if [ ! -e "$a" ]; then
        echo "layout: $a missing (build first)"
        exit 1
    fi
    nm --defined-only -g "$a" 2>/dev/null | awk 'NF == 3 && $2 ~ /[TDBR]/ {print $3}' | sort -u >"$tmp/$f.def"
    nm -u "$a" 2>/dev/null | awk '{print $NF}' | sort -u >"$tmp/$f.und"
done
for a in "${!lib[@]}"; do
    for b in "${!lib[@]}"; do
        [ "$a" \< "$b" ] || continue
        ab=$(comm -12 "$tmp/$a.und" "$tmp/$b.def" | head -n 3 | tr '\n' ' ')
        ba=$(comm -12 "$tmp/$b.und" "$tmp/$a.def" | head -n 3 | tr '\n' ' ')
        if [ -n "$ab" ] && [ -n "$ba" ]; then
            echo "layout: $a and $b call each other ($a uses ${ab}; $b uses ${ba})"
            fail=1
        fi
    done
done

# file size
while IFS= read -r file; do
    n=$(wc -l <"$file")
    if [ "$n" -gt 1000 ]; then
        echo "layout: ${file#"$src"/} has $n lines (limit 1000): split it by theme"
        fail=1
    fi
done < <(find "$src/runtime" "$src/log" "$src/proto" "$src/replication" "$src/meta" \
              "$src/actors" "$src/ctl" "$src/bench" "$src/examples" -name '*.[ch]')

[ "$fail" -eq 0 ] && echo "layout: ok"
exit "$fail"
