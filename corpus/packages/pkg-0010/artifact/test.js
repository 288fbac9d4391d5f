const assert = require("assert");
const kebab = require("./index");
assert.strictEqual(kebab("helloWorld"), "hello-world");
