#!/usr/bin/env bash
# The HTML reports open in headless Chromium: for every study page and the index, a screenshot
# is taken (and must not be blank), the rendered DOM holds every plot as a non-empty SVG, the
# speedup plot has the paper's markers, nothing was logged to the console, and nothing is
# loaded from outside the file.
# Usage: report_html.sh CNNPAR CHROMIUM
set -euo pipefail
cnnpar=$1
chromium=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$cnnpar" report --out "$work/reports" -q
# The part of a DOM from a plot's container to the end of its SVG.
plot_markup() {  # plot_markup DOM PLOT
  awk -v plot="data-plot=\"$2\"" '
    !inside && index($0, plot) { inside = 1; rest = substr($0, index($0, plot)); print rest; if (rest ~ /<\/svg>/) exit; next }
    inside { print } inside && /<\/svg>/ { exit }' "$1"
}
browse() {  # browse OUTPUT_PREFIX FILE: DOM, console log and screenshot of one page
  local prefix=$1 page=$2
  # A DOM dumped before the page was whole would still be closed by </html>: dump again until
  # it holds the page's last paragraph.
  local attempt last
  last=$(grep -o '<p class="note">[^<]*' "$page" | tail -n 1)
  [ -n "$last" ] || { echo "report_html: $page has no closing note" >&2; exit 1; }
  for attempt in 1 2 3 4 5; do
    "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=3000 \
      --enable-logging=stderr --v=0 --dump-dom "file://$page" > "$prefix.dom" 2> "$prefix.log"
    grep -qF "$last" "$prefix.dom" && break
    echo "report_html: $page: incomplete DOM (attempt $attempt), dumping again" >&2
    [ $attempt -lt 5 ] || { echo "report_html: $page: the DOM never held the whole page" >&2; exit 1; }
  done
  "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,2400 \
    --screenshot="$prefix.png" "file://$page" > /dev/null 2>&1
  [ -s "$prefix.png" ] || { echo "report_html: no screenshot of $page" >&2; exit 1; }
  # A blank white page compresses to a few KiB; plots and tables do not.
  [ "$(stat -c %s "$prefix.png")" -gt 30000 ] || { echo "report_html: $page looks blank" >&2; exit 1; }
  if grep -i 'CONSOLE' "$prefix.log"; then echo "report_html: console output on $page" >&2; exit 1; fi
  if grep -Eo '(src|href)="(https?:)?//[^"]*' "$page"; then echo "report_html: $page loads from outside" >&2; exit 1; fi
}
pages=0
with_paper=0
for page in "$work"/reports/*/index.html; do
  study=$(basename "$(dirname "$page")")
  browse "$work/$study" "$page"
  dom="$work/$study.dom"
  # Every plot container holds an SVG with drawn paths: the speedup, the overlap ratio and the timeline.
  for plot in speedup.svg overlap.svg timeline.svg; do
    body=$(plot_markup "$dom" "$plot")
    # A here-string, not echo | grep -q: grep -q stops at the first match, and with pipefail
    # the echo still writing a large SVG (over a pipe buffer) then fails the check (SIGPIPE).
    grep -q '<svg' <<< "$body" || { echo "report_html: $study: no $plot in the page" >&2; exit 1; }
    [ "$(grep -c '<path' <<< "$body")" -gt 3 ] || { echo "report_html: $study: $plot is empty" >&2; exit 1; }
  done
  # The paper's published speedups, where the study has some (its report.md then compares
  # them; published iteration times are compared in the table only): a plot group titled
  # "paper: ..." with markers in it.
  if grep -Eq '^\| .* \| (speedup at [0-9]+ nodes|maximum speedup) \|' "$(dirname "$page")/report.md"; then
    speedup=$(plot_markup "$dom" speedup.svg)
    grep -q '<title>paper: ' <<< "$speedup" || { echo "report_html: $study: no paper markers" >&2; exit 1; }
    awk '/<title>paper: / {paper = 1} paper && /<use / {found = 1} END {exit !found}' <<< "$speedup" ||
      { echo "report_html: $study: the paper's group draws no marker" >&2; exit 1; }
    with_paper=$((with_paper + 1))
  fi
  grep -q '<table>' "$dom" || { echo "report_html: $study: no table" >&2; exit 1; }
  pages=$((pages + 1))
done
browse "$work/index" "$work/reports/index.html"
[ "$(grep -c '/index.html">' "$work/index.dom")" -eq $pages ] || { echo "report_html: the index does not link every study" >&2; exit 1; }
[ $with_paper -ge 4 ] || { echo "report_html: only $with_paper studies with the paper's numbers" >&2; exit 1; }
echo "report_html: $pages study pages and the index rendered, every plot drawn, paper markers in all $with_paper with published numbers"
