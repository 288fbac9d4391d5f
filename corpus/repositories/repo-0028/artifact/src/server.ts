import express from "express";
import { issue, requireUser } from "./auth.js";

const app = express();
app.use(express.json());

app.post("/login", (req, res) => {
  res.json({ token: issue(String(req.body.user)) });
});

app.post("/quote", requireUser, (req, res) => {
  const formula: string = req.body.formula;
  const price = new Function("qty", "unit", `return ${formula};`)(req.body.qty, req.body.unit);
  res.json({ price });
});

app.listen(3000, "127.0.0.1");
