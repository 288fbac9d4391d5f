const crypto = require("crypto");
const express = require("express");

const SECRET = process.env.WEBHOOK_SECRET;
const TARGETS = { deploy: "https://deploy.internal.example.com/hooks/run", chat: "https://chat.example.com/api/post" };

const app = express();
app.use(express.raw({ type: "application/json" }));

function verified(req) {
  const sig = req.get("x-hub-signature-256") || "";
  const mac = "sha256=" + crypto.createHmac("sha256", SECRET).update(req.body).digest("hex");
  return sig.length === mac.length && crypto.timingSafeEqual(Buffer.from(sig), Buffer.from(mac));
}

app.post("/relay/:target", async (req, res) => {
  if (!verified(req)) return res.sendStatus(401);
  const url = TARGETS[req.params.target];
  if (!url) return res.sendStatus(404);
  const out = await fetch(url, { method: "POST", body: req.body, headers: { "content-type": "application/json" } });
  res.sendStatus(out.ok ? 204 : 502);
});

app.listen(8090, "127.0.0.1");
