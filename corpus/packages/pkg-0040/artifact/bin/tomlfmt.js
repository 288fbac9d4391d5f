#!/usr/bin/env node
"use strict";
const path = require("path");
const { spawnSync } = require("child_process");
const exe = process.env.TOMLFMT_BINARY_PATH || path.join(__dirname, process.platform === "win32" ? "tomlfmt.exe" : "tomlfmt");
const result = spawnSync(exe, process.argv.slice(2), { stdio: "inherit" });
process.exit(result.status === null ? 1 : result.status);
