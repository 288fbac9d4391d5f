const express = require("express");
const { merge } = require("./lib/merge");

const app = express();
app.use(express.json());
const prefs = new Map();

app.post("/prefs/:user", (req, res) => {
  const current = prefs.get(req.params.user) || Object.create(null);
  prefs.set(req.params.user, merge(current, JSON.parse(req.body.raw)));
  res.json(prefs.get(req.params.user));
});

app.get("/continue", (req, res) => {
  const next = String(req.query.next || "/");
  res.redirect(next.startsWith("/") && !next.startsWith("//") ? next : "/");
});

app.listen(8080, "127.0.0.1");
