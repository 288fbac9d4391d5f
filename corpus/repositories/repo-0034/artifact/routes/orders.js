const express = require("express");
const fs = require("fs");
const path = require("path");
const db = require("../db");

const router = express.Router();
const INVOICES = path.join(__dirname, "..", "invoices");

router.get("/orders/:id", async (req, res) => {
  const rows = await db.query("SELECT * FROM orders WHERE id = $1", [req.params.id]);
  res.json(rows);
});

router.get("/invoice", (req, res) => {
  const target = path.resolve(INVOICES, String(req.query.file));
  if (!target.startsWith(INVOICES + path.sep)) return res.status(400).end();
  fs.readFile(target, (err, data) => {
    if (err) return res.status(404).end();
    res.type("pdf").send(data);
  });
});

module.exports = router;
