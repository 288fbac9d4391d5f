const tools = require("./tools.json").tools;
process.stdin.on("data", (buf) => {
  for (const line of buf.toString().split("\n").filter(Boolean)) {
    const msg = JSON.parse(line);
    let result = {};
    if (msg.method === "tools/list") result = { tools };
    if (msg.method === "tools/call") result = { content: [{ type: "text", text: msg.params.arguments.text }] };
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }) + "\n");
  }
});
