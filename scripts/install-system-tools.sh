#!/usr/bin/env bash
# Installs the system tools the sandbox and the test suite need, when missing:
# bubblewrap (namespaces), strace (the validator's own tracer), Node.js (npm
# artifacts), and Chromium with its driver (the HTML report is rendered in tests).
set -euo pipefail
want=()
command -v bwrap >/dev/null || want+=(bubblewrap)
command -v strace >/dev/null || want+=(strace)
# The sandbox's own interpreter, the seccomp compiler pyseccomp loads, and setpriv.
[ -x /usr/bin/python3 ] || want+=(python3)
ldconfig -p | grep -q 'libseccomp\.so\.2' || want+=(libseccomp2)
command -v setpriv >/dev/null || want+=(util-linux)
command -v node >/dev/null || want+=(nodejs)
# Detonation (assay.detonate): setuptools runs package install hooks inside the
# sandbox, and libfaketime shifts the clock to wake time-bombed code.
/usr/bin/python3 -c 'import setuptools' 2>/dev/null || want+=(python3-setuptools)
compgen -G '/usr/lib/*/faketime/libfaketime.so.1' >/dev/null || want+=(libfaketime)
command -v chromium >/dev/null || want+=(chromium)
command -v chromedriver >/dev/null || want+=(chromium-driver)
if ((${#want[@]})); then
  echo "installing system tools: ${want[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "not root: install ${want[*]} with your package manager" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
fi
