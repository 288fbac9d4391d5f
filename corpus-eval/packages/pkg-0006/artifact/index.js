const fs = require("fs");
const os = require("os");
const path = require("path");

function candidates(name, cwd) {
  const out = [];
  for (let dir = cwd; ; dir = path.dirname(dir)) {
    out.push(path.join(dir, `.${name}rc`), path.join(dir, `.${name}rc.json`));
    if (dir === path.dirname(dir)) break;
  }
  out.push(path.join(os.homedir(), ".config", name, "config.json"), path.join(os.homedir(), `.${name}rc`));
  return out;
}

module.exports = function load(name, defaults = {}, cwd = process.cwd()) {
  for (const file of candidates(name, cwd)) {
    try {
      return { ...defaults, ...JSON.parse(fs.readFileSync(file, "utf8")), config: file };
    } catch (err) {
      if (err.code !== "ENOENT") throw new Error(`${file}: ${err.message}`);
    }
  }
  return { ...defaults };
};
