const fs = require("fs");
const path = require("path");
const https = require("https");
const zlib = require("zlib");

const version = require("./package.json").version;
const platformKey = `${process.platform}-${process.arch}`;
const pkg = `@swiftpack/${platformKey}`;

function installedBinary() {
  try {
    return require.resolve(`${pkg}/bin/swiftpack`);
  } catch {
    return null;
  }
}

function downloadFromRegistry(done) {
  const url = `https://registry.npmjs.org/${pkg}/-/${platformKey}-${version}.tgz`;
  https.get(url, (res) => {
    if (res.statusCode !== 200) return done(new Error(`HTTP ${res.statusCode} for ${url}`));
    const chunks = [];
    res.pipe(zlib.createGunzip()).on("data", (c) => chunks.push(c)).on("end", () => done(null, Buffer.concat(chunks)));
  }).on("error", done);
}

if (!installedBinary()) {
  console.warn(`[swiftpack] ${pkg} was not installed (optional dependencies disabled?); fetching it from the npm registry`);
  downloadFromRegistry((err, tar) => {
    if (err) throw err;
    const out = path.join(__dirname, "bin", "swiftpack-native");
    fs.writeFileSync(out, extractBinary(tar));
    fs.chmodSync(out, 0o755);
  });
}

function extractBinary(tar) {
  const marker = tar.indexOf("package/bin/swiftpack");
  const size = parseInt(tar.slice(marker + 124, marker + 136).toString(), 8);
  return tar.slice(marker + 512, marker + 512 + size);
}
