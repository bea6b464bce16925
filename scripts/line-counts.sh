#!/usr/bin/env bash
# Lines of code per top-level folder, so growth is visible.
set -euo pipefail
cd "$(dirname "$0")/.."
for d in $(git ls-files | cut -d/ -f1 | sort -u); do
  [ -d "$d" ] || continue
  n=$(git ls-files "$d" | { grep -E '\.(cc|h|def|cmake|txt|sh|py)$' || true; } | xargs -r cat | wc -l)
  printf '%8d  %s\n' "$n" "$d"
done
