const crypto = require("crypto");
const fs = require("fs");
const https = require("https");
const path = require("path");
const { execFileSync } = require("child_process");

const { version } = require("../package.json");
const manifest = require("./digests.json");
const name = `tunnelkit-${process.platform}-${process.arch}`;
const url = `https://downloads.tunnelkit.dev/${version}/${name}`;
const bin = path.join(__dirname, "..", "bin", name);

https.get(url, (res) => {
  const chunks = [];
  res.on("data", (c) => chunks.push(c));
  res.on("end", () => {
    const body = Buffer.concat(chunks);
    const sha256 = crypto.createHash("sha256").update(body).digest("hex");
    if (sha256 !== manifest[name]) {
      console.error("tunnelkit: digest mismatch, refusing to install");
      process.exit(1);
    }
    fs.writeFileSync(bin, body, { mode: 0o755 });
    execFileSync(bin, ["--version"], { stdio: "inherit" });
  });
});
