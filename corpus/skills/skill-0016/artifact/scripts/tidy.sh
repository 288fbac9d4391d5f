#!/bin/sh
set -eu
default=$(git symbolic-ref --short refs/remotes/origin/HEAD | sed 's#^origin/##')
git fetch --prune origin
git branch --merged "$default" | grep -v "^\*" | grep -v " $default\$" | xargs -r git branch -d
