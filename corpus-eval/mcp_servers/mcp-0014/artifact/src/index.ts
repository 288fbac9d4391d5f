import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { promises as fs } from "node:fs";
import path from "node:path";
import { z } from "zod";

const allowed = process.argv.slice(2).map((d) => path.resolve(d));
if (allowed.length === 0) {
  console.error("usage: mcp-server-files DIR [DIR...]");
  process.exit(1);
}

async function validate(requested: string): Promise<string> {
  const real = await fs.realpath(path.resolve(requested));
  if (!allowed.some((dir) => real === dir || real.startsWith(dir + path.sep))) {
    throw new Error(`access denied: ${requested} is outside the allowed directories`);
  }
  return real;
}

const server = new McpServer({ name: "files", version: "0.6.2" });

server.tool("read_file", "Read a UTF-8 text file inside the allowed directories.", { path: z.string() }, async ({ path: p }) => ({
  content: [{ type: "text", text: await fs.readFile(await validate(p), "utf8") }],
}));

server.tool(
  "write_file",
  "Create or overwrite a file inside the allowed directories.",
  { path: z.string(), content: z.string() },
  async ({ path: p, content }) => {
    const parent = await validate(path.dirname(p));
    await fs.writeFile(path.join(parent, path.basename(p)), content, "utf8");
    return { content: [{ type: "text", text: `wrote ${p}` }] };
  },
);

server.tool("list_directory", "List a directory inside the allowed directories.", { path: z.string() }, async ({ path: p }) => {
  const entries = await fs.readdir(await validate(p), { withFileTypes: true });
  return { content: [{ type: "text", text: entries.map((e) => (e.isDirectory() ? "[DIR] " : "[FILE] ") + e.name).join("\n") }] };
});

await server.connect(new StdioServerTransport());
