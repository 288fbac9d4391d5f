import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);
const REF = /^[A-Za-z0-9._\/-]{1,200}$/;

export async function changedFiles(repo: string, base: string, head: string): Promise<string[]> {
  if (!REF.test(base) || !REF.test(head) || base.startsWith("-") || head.startsWith("-")) {
    throw new Error("invalid ref");
  }
  const { stdout } = await run("git", ["-C", repo, "diff", "--name-only", `${base}...${head}`, "--"]);
  return stdout.split("\n").filter(Boolean);
}
