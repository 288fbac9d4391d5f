"use strict";

function parse(ua) {
  const s = String(ua || "");
  const browser = /Firefox\/(\d+)/.exec(s) ? "firefox" : /Chrome\/(\d+)/.exec(s) ? "chrome" : "other";
  return { browser, mobile: /Mobile/.test(s) };
}

module.exports = { parse };
