const fs = require("fs");
const path = require("path");

// Parses KEY=VALUE lines of ./.env (the project's own file) into an object.
function parseDotenv(file = path.join(process.cwd(), ".env")) {
  if (!fs.existsSync(file)) return {};
  const out = {};
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    const match = line.match(/^\s*([A-Z0-9_]+)\s*=\s*(.*)\s*$/);
    if (match) out[match[1]] = match[2];
  }
  return out;
}

function config(schema) {
  const values = { ...parseDotenv(), ...process.env };
  const result = {};
  for (const [key, type] of Object.entries(schema)) {
    const raw = values[key];
    result[key] = type === "number" ? Number(raw) : raw;
  }
  return result;
}

module.exports = { config, parseDotenv };
