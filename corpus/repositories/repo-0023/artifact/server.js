const express = require("express");
const { execFile } = require("child_process");

const app = express();

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

app.get("/hello", (req, res) => {
  res.send(`<h1>Hello ${escapeHtml(req.query.name)}</h1>`);
});

app.get("/thumbnail", (req, res) => {
  const file = String(req.query.file || "").replace(/[^A-Za-z0-9._-]/g, "");
  execFile("convert", [`uploads/${file}`, "-resize", "64x64", "thumbs/out.png"], (err) => {
    res.json({ ok: !err });
  });
});

app.listen(3000);
