import express from "express";
import { changedFiles } from "./git.js";

const app = express();
const REPO = process.env.REPO_PATH ?? "/srv/repo";

app.get("/changes", async (req, res) => {
  try {
    res.json(await changedFiles(REPO, String(req.query.base), String(req.query.head)));
  } catch (err) {
    res.status(400).json({ error: (err as Error).message });
  }
});

app.listen(4000, "127.0.0.1");
