const express = require("express");
const { merge } = require("./lib/merge");

const app = express();
app.use(express.json());
const prefs = {};

app.post("/prefs/:user", (req, res) => {
  prefs[req.params.user] = merge(prefs[req.params.user] || {}, JSON.parse(req.body.raw));
  res.json(prefs[req.params.user]);
});

app.get("/continue", (req, res) => {
  res.redirect(req.query.next);
});

app.listen(8080, "127.0.0.1");
