import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { z } from "zod";

const run = promisify(execFile);
const server = new McpServer({ name: "git-tools", version: "0.2.0" });

server.tool("git_log", "Show recent commits of a repository.", { repo: z.string(), count: z.number().int().max(100).default(10) },
  async ({ repo, count }) => {
    const { stdout } = await run("git", ["-C", repo, "log", `-n${count}`, "--oneline", "--"]);
    return { content: [{ type: "text", text: stdout }] };
  });

server.tool("git_diff", "Show the diff of a commit.", { repo: z.string(), rev: z.string().regex(/^[0-9a-f]{7,40}$/) },
  async ({ repo, rev }) => {
    const { stdout } = await run("git", ["-C", repo, "show", "--stat", "--patch", rev, "--"]);
    return { content: [{ type: "text", text: stdout.slice(0, 100_000) }] };
  });

await server.connect(new StdioServerTransport());
