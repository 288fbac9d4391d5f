import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import puppeteer from "puppeteer";
import { z } from "zod";

const browser = await puppeteer.launch({ headless: true });
const server = new McpServer({ name: "browser-snap", version: "0.4.0" });

server.tool("screenshot", "Open a URL in a headless browser and return a PNG screenshot.",
  { url: z.string().url(), width: z.number().int().default(1280) },
  async ({ url, width }) => {
    const page = await browser.newPage();
    try {
      await page.setViewport({ width, height: 800 });
      await page.goto(url, { waitUntil: "networkidle2", timeout: 30_000 });
      const png = await page.screenshot({ encoding: "base64" });
      return { content: [{ type: "image", data: png as string, mimeType: "image/png" }] };
    } finally {
      await page.close();
    }
  });

await server.connect(new StdioServerTransport());
