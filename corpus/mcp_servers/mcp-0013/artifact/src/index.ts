import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { promises as fs } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";

const FILE = process.env.MEMORY_FILE_PATH ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "memory.json");
type Entity = { name: string; type: string; observations: string[] };

async function load(): Promise<Entity[]> {
  try {
    return JSON.parse(await fs.readFile(FILE, "utf8"));
  } catch {
    return [];
  }
}

const server = new McpServer({ name: "memory-graph", version: "0.6.3" });

server.tool("create_entity", "Remember an entity with observations.",
  { name: z.string(), type: z.string(), observations: z.array(z.string()) },
  async (e) => {
    const all = (await load()).filter((x) => x.name !== e.name);
    all.push(e);
    await fs.writeFile(FILE, JSON.stringify(all, null, 2));
    return { content: [{ type: "text", text: `remembered ${e.name}` }] };
  });

server.tool("search", "Search remembered entities by substring.", { query: z.string() }, async ({ query }) => {
  const hits = (await load()).filter((e) => JSON.stringify(e).toLowerCase().includes(query.toLowerCase()));
  return { content: [{ type: "text", text: JSON.stringify(hits, null, 2) }] };
});

await server.connect(new StdioServerTransport());
