#!/usr/bin/env node
const path = require("path");
const { spawnSync } = require("child_process");
const exe = path.join(__dirname, `tunnelkit-${process.platform}-${process.arch}`);
process.exit(spawnSync(exe, process.argv.slice(2), { stdio: "inherit" }).status ?? 1);
