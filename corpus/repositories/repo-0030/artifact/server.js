const express = require("express");
const { exec } = require("child_process");

const app = express();

app.get("/hello", (req, res) => {
  res.send(`<h1>Hello ${req.query.name}</h1>`);
});

app.get("/thumbnail", (req, res) => {
  exec(`convert uploads/${req.query.file} -resize 64x64 thumbs/out.png`, (err) => {
    res.json({ ok: !err });
  });
});

app.listen(3000);
