const assert = require("assert");
const { Env } = require("../lib");
const env = new Env("/tmp/lmdb-lite-test");
env.put("a", "1");
assert.strictEqual(env.get("a").toString(), "1");
env.close();
