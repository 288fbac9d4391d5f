class ScopeManager {
  constructor(options) {
    this.options = options;
    this.scopes = [];
  }
  analyze(tree) {
    this.scopes.push({ type: "global", block: tree });
    return this;
  }
}
module.exports = ScopeManager;
