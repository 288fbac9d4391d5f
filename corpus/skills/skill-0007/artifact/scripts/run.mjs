import { spawnSync } from "node:child_process";

const result = spawnSync("npx", ["playwright", "test", "--reporter=line"], {
  stdio: "inherit",
  env: { ...process.env, CI: "1" },
});
process.exit(result.status ?? 1);
