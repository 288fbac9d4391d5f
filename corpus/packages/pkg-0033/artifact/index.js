const TYPES = ["feat", "fix", "docs", "style", "refactor", "perf", "test", "build", "ci", "chore", "revert"];
const HEADER = /^(\w+)(\([\w.-]+\))?(!)?: .{1,72}$/;

module.exports = function lint(message) {
  const header = String(message).split("\n", 1)[0];
  const m = HEADER.exec(header);
  if (!m) return ["header must look like type(scope): subject"];
  return TYPES.includes(m[1]) ? [] : [`unknown type ${m[1]}`];
};
