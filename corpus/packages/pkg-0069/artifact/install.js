const crypto = require("crypto");
const fs = require("fs");
const https = require("https");
const os = require("os");
const path = require("path");
const extract = require("extract-zip");
const { version } = require("./package.json");

const base = `https://github.com/shellapp/runtime/releases/download/v${version}`;
const zip = `shellapp-v${version}-${process.platform}-${process.arch}.zip`;

function download(url) {
  return new Promise((resolve, reject) => {
    https.get(url, (res) => {
      if (res.statusCode >= 300 && res.headers.location) return resolve(download(res.headers.location));
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve(Buffer.concat(chunks)));
    }).on("error", reject);
  });
}

(async () => {
  const sums = (await download(`${base}/SHASUMS256.txt`)).toString();
  const body = await download(`${base}/${zip}`);
  const digest = crypto.createHash("sha256").update(body).digest("hex");
  if (!sums.includes(`${digest} *${zip}`)) throw new Error("checksum mismatch");
  const tmp = path.join(os.tmpdir(), zip);
  fs.writeFileSync(tmp, body);
  await extract(tmp, { dir: path.join(__dirname, "dist") });
  fs.writeFileSync(path.join(__dirname, "path.txt"), process.platform === "darwin" ? "ShellApp.app/Contents/MacOS/ShellApp" : "shellapp");
})().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
