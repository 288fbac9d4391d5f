const net = require("net");
exports.connect = (sock, onMessage) => {
  const c = net.createConnection(sock);
  c.on("data", (d) => onMessage(JSON.parse(d.toString())));
  return { send: (m) => c.write(JSON.stringify(m)) };
};
