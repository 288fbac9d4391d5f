if (!Array.prototype.at) {
  Object.defineProperty(Array.prototype, "at", {
    value: function at(n) {
      n = Math.trunc(n) || 0;
      if (n < 0) n += this.length;
      return n < 0 || n >= this.length ? undefined : this[n];
    },
    configurable: true,
    writable: true,
  });
}
