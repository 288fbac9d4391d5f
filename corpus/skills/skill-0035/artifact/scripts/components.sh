#!/bin/sh
set -eu
rustup update stable
rustup component add clippy rustfmt rust-src
rustc --version
cargo --version
