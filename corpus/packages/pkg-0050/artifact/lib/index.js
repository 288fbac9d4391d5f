"use strict";
const binding = require("bindings")("lmdb_lite");

class Env {
  constructor(path, options = {}) {
    this.handle = binding.open(path, options.mapSize || 10485760);
  }
  get(key) {
    return binding.get(this.handle, String(key));
  }
  put(key, value) {
    binding.put(this.handle, String(key), Buffer.from(value));
  }
  close() {
    binding.close(this.handle);
  }
}

module.exports = { Env };
