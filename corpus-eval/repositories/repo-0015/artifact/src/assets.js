import { exec } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";

const CACHE = path.resolve("cache");

export function fetchImage(req, res) {
  const { fileKey, nodeId } = req.query;
  const url = `https://api.example.com/v1/images/${fileKey}?ids=${nodeId}`;
  exec(`curl -s -o ${CACHE}/${nodeId}.png "${url}"`, (err) => {
    if (err) return res.status(502).send("download failed");
    res.json({ cached: `${nodeId}.png` });
  });
}

export async function cachedImage(req, res) {
  const data = await readFile(path.join(CACHE, req.params.name));
  res.type("png").send(data);
}
