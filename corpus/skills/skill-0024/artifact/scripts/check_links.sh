#!/bin/sh
# Print relative Markdown links whose target file does not exist.
set -eu
root="${1:-.}"
find "$root" -name '*.md' | while read -r file; do
    dir=$(dirname "$file")
    grep -o '](\([^)#:]*\))' "$file" | sed 's/^](\(.*\))$/\1/' | while read -r link; do
        [ -z "$link" ] && continue
        [ -e "$dir/$link" ] || echo "$file: broken link $link"
    done
done
