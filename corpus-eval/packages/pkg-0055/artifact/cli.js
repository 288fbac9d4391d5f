#!/usr/bin/env node
"use strict";
const { execFileSync, spawn } = require("child_process");

function git(...args) {
  return execFileSync("git", args, { encoding: "utf8" }).trim();
}

function lastTag() {
  try {
    return git("describe", "--tags", "--abbrev=0");
  } catch {
    return null;
  }
}

function notes(since) {
  const range = since ? `${since}..HEAD` : "HEAD";
  return git("log", range, "--pretty=format:- %s (%h)").split("\n").filter(Boolean);
}

function openUrl(url) {
  const opener = process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open";
  spawn(opener, [url], { stdio: "ignore", detached: true }).unref();
}

const tag = lastTag();
const lines = notes(tag);
console.log(`## Changes since ${tag || "the first commit"}\n\n${lines.join("\n")}`);
const remote = git("config", "--get", "remote.origin.url").replace(/\.git$/, "");
if (process.argv.includes("--open") && remote.startsWith("https://github.com/")) {
  openUrl(`${remote}/releases/new?tag=${encodeURIComponent(tag || "")}`);
}
