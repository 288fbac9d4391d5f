const url = process.argv[2];
if (!url || !/^https?:\/\//.test(url)) {
  console.error("usage: outline.ts https://...");
  process.exit(2);
}
const controller = new AbortController();
setTimeout(() => controller.abort(), 10_000);
const res = await fetch(url, { signal: controller.signal, redirect: "follow" });
const html = (await res.text()).slice(0, 2_000_000);
const title = /<title[^>]*>([^<]*)<\/title>/i.exec(html)?.[1]?.trim() ?? "(no title)";
console.log(`# ${title}`);
for (const m of html.matchAll(/<h([1-3])[^>]*>(.*?)<\/h\1>/gis)) {
  console.log(`${"  ".repeat(Number(m[1]) - 1)}- ${m[2].replace(/<[^>]+>/g, "").trim()}`);
}
