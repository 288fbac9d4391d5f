#!/bin/sh
set -eu
docker system df
docker ps -a --filter status=exited --format '{{.Names}}\t{{.Status}}'
