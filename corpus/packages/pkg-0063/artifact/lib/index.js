"use strict";
const codes = { red: [31, 39], green: [32, 39], bold: [1, 22] };

function paint(name, text) {
  const [open, close] = codes[name];
  return `\u001b[${open}m${text}\u001b[${close}m`;
}

const american = require("./custom/american");
american();

module.exports = { red: (t) => paint("red", t), green: (t) => paint("green", t), bold: (t) => paint("bold", t) };
