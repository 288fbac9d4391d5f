#!/bin/sh
# List commit subjects since a tag, grouped by conventional-commit type.
set -eu
since="${1:-}"
range="${since:+$since..}HEAD"
for kind in feat fix docs chore; do
    echo "## $kind"
    git log --pretty=format:%s "$range" 2>/dev/null | grep "^$kind" || true
done
