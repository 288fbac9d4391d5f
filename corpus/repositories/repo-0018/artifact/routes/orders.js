const express = require("express");
const fs = require("fs");
const path = require("path");
const db = require("../db");

const router = express.Router();
const INVOICES = path.join(__dirname, "..", "invoices");

router.get("/orders/:id", async (req, res) => {
  const rows = await db.query("SELECT * FROM orders WHERE id = '" + req.params.id + "'");
  res.json(rows);
});

router.get("/invoice", (req, res) => {
  fs.readFile(path.join(INVOICES, req.query.file), (err, data) => {
    if (err) return res.status(404).end();
    res.type("pdf").send(data);
  });
});

module.exports = router;
