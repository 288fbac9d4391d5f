import express from "express";
import { Parser } from "expr-eval";
import { issue, requireUser } from "./auth.js";

const app = express();
app.use(express.json());
const parser = new Parser({ operators: { assignment: false, fndef: false } });

app.post("/login", (req, res) => {
  res.json({ token: issue(String(req.body.user)) });
});

app.post("/quote", requireUser, (req, res) => {
  const expr = parser.parse(String(req.body.formula));
  const price = expr.evaluate({ qty: Number(req.body.qty), unit: Number(req.body.unit) });
  res.json({ price });
});

app.listen(3000, "127.0.0.1");
