#!/usr/bin/env bash
# Installs the system tools the sandbox and the test suite need, when missing:
# bubblewrap (namespaces), strace (the agents' reps' tracer), bpftrace (detonation's), Node.js (npm
# artifacts), Chromium with its driver (the HTML report is rendered in tests), and
# the agents' runtime (the pinned packages of scripts/agent-runtime.txt).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
want=()
command -v bwrap >/dev/null || want+=(bubblewrap)
command -v strace >/dev/null || want+=(strace)
# Detonation's observer: eBPF probes on the kernel's tracepoints (needs BTF, CAP_BPF).
command -v bpftrace >/dev/null || want+=(bpftrace)
# Detonation's network: a namespace per run (iproute2, util-linux's unshare and nsenter)
# whose nftables rules send every connection and DNS query to the validator's sink.
PATH="$PATH:/usr/sbin:/sbin" command -v ip >/dev/null || want+=(iproute2)
PATH="$PATH:/usr/sbin:/sbin" command -v nft >/dev/null || want+=(nftables)
# The sandbox's own interpreter, the seccomp compiler pyseccomp loads, and setpriv.
[ -x /usr/bin/python3 ] || want+=(python3)
# grep reads all of ldconfig's output: with -q it could stop early, and pipefail
# would count ldconfig's broken pipe as the library missing.
ldconfig -p | grep 'libseccomp\.so\.2' >/dev/null || want+=(libseccomp2)
command -v setpriv >/dev/null || want+=(util-linux)
# pip for the sandbox's interpreter installs the agents' runtime below.
/usr/bin/python3 -m pip --version >/dev/null 2>&1 || want+=(python3-pip)
command -v node >/dev/null || want+=(nodejs)
command -v npm >/dev/null || want+=(npm)
# Detonation (assay.detonate): setuptools runs package install hooks inside the
# sandbox, and libfaketime shifts the clock to wake time-bombed code.
/usr/bin/python3 -c 'import setuptools' 2>/dev/null || want+=(python3-setuptools)
# pip builds packages offline without isolation: setuptools' wheel support is the runtime's.
/usr/bin/python3 -c 'import wheel' 2>/dev/null || want+=(python3-wheel)
# npm runs the implicit `node-gyp rebuild` of a binding.gyp: make, a compiler, Node's headers.
command -v make >/dev/null || want+=(make)
command -v c++ >/dev/null || want+=(g++)
[ -f /usr/include/node/node.h ] || want+=(libnode-dev)
compgen -G '/usr/lib/*/faketime/libfaketime.so.1' >/dev/null || want+=(libfaketime)
# The planted home is an ext4 image whose every time is set back (mke2fs, debugfs).
PATH="$PATH:/usr/sbin:/sbin" command -v debugfs >/dev/null || want+=(e2fsprogs)
# Go MCP servers are built inside the sandbox, offline, with Debian's toolchain.
command -v go >/dev/null || want+=(golang-go)
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

# The agents' runtime, installed for /usr/bin/python3 under /usr (which every
# sandbox binds read-only); the shim puts it on sys.path. Reinstalled whenever the
# lock changes, into a fresh directory swapped in whole. SOURCE_DATE_EPOCH makes
# the compiled bytecode hash-checked rather than timestamped, so the same lock
# gives the same files (the backend's digest hashes them) on every machine.
runtime=/usr/local/lib/assay/agent-runtime
lock="$here/agent-runtime.txt"
if ! cmp -s "$lock" "$runtime/.lock"; then
  echo "installing the agents' runtime into $runtime"
  if [ "$(id -u)" -ne 0 ]; then
    echo "not root: cannot write $runtime" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$runtime")"
  rm -rf "$runtime".new.*  # what an interrupted install left
  fresh="$(mktemp -d "$runtime.new.XXXXXX")"
  SOURCE_DATE_EPOCH=0 PIP_DISABLE_PIP_VERSION_CHECK=1 /usr/bin/python3 -m pip install \
    --quiet --root-user-action=ignore --no-deps --only-binary=:all: --require-hashes --target "$fresh" -r "$lock"
  cp "$lock" "$fresh/.lock"
  chmod -R a+rX,go-w "$fresh"
  rm -rf "$runtime.old"
  if [ -e "$runtime" ]; then mv "$runtime" "$runtime.old"; fi
  mv "$fresh" "$runtime"
  rm -rf "$runtime.old"
fi
# The MCP SDKs and TypeScript runner detonation offers servers, offline and pinned.
"$(dirname "$0")/install-detonation-runtime.sh"
