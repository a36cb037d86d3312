#!/usr/bin/env bash
# check_includes.sh [ROOT]: reads every #include "..." of the C++ sources under ROOT (default:
# this checkout) against the layer table ROOT/cmake/layers.txt and fails, naming file, line and
# header, when a file includes a folder its layer may not see: a layer above its own, or a
# sibling (sim/ and real/ never each other). Files under tests/ may include anything. A source
# file in a folder the table does not list fails too, and so does an include that climbs ("../").
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
table=$root/cmake/layers.txt
[ -f "$table" ] || { echo "check_includes.sh: no layer table $table" >&2; exit 2; }

cd "$root"
find . -path ./tests -prune -o -path './build*' -prune -o -path ./.git -prune -o \
       \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) -print |
  sed 's#^\./##' | sort |
  awk -v table="$table" '
    # The table: folder -> folders directly beneath; visible = the closure.
    BEGIN {
      while ((getline line < table) > 0) {
        if (line ~ /^[ \t]*#/ || line !~ /:/) continue
        split(line, parts, ":")
        folder = parts[1]; gsub(/[ \t]/, "", folder)
        layers[folder] = 1
        beneath[folder] = parts[2]
      }
      for (f in layers) visible_of(f)
    }
    function visible_of(f,    n, i, list, result, below) {
      if (f in visible) return visible[f]
      result = " " f " "
      n = split(beneath[f], list, /[ \t]+/)
      for (i = 1; i <= n; i++) if (list[i] != "") {
        below = visible_of(list[i])
        result = result below
      }
      visible[f] = result
      return result
    }
    # The layer a path belongs to: the longest listed folder that prefixes it.
    function layer_of(path,    f, best) {
      best = ""
      for (f in layers)
        if (index(path, f "/") == 1 && length(f) > length(best)) best = f
      return best
    }
    {
      file = $0
      own = layer_of(file)
      if (own == "") { printf "%s: not in any layer of cmake/layers.txt\n", file; bad++; next }
      line_number = 0
      while ((getline text < file) > 0) {
        line_number++
        if (text !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
        header = text
        sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", header)
        sub(/".*$/, "", header)
        if (header ~ /(^|\/)\.\.\//) {
          printf "%s:%d: includes \"%s\", which climbs out of its folder\n", file, line_number, header; bad++; continue
        }
        if (index(header, "tests/") == 1) {
          printf "%s:%d: includes \"%s\": library and app code never includes tests/\n", file, line_number, header; bad++; continue
        }
        target = layer_of(header)
        if (target == "") continue  # beside the file, or a header of no layer (a third-party one)
        if (index(visible[own], " " target " ") == 0) {
          printf "%s:%d: includes \"%s\": %s/ may not see %s/ (cmake/layers.txt)\n", file, line_number, header, own, target
          bad++
        }
      }
      close(file)
      files++
    }
    END {
      if (bad) { printf "check_includes.sh: %d include(s) break the layers\n", bad; exit 1 }
      printf "check_includes.sh: %d files, every include within its layers\n", files
    }'
