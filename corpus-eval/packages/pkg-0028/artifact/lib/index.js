const { Transform } = require("stream");
const util = require("./util");

class CsvStream extends Transform {
  constructor(opts = {}) {
    super({ readableObjectMode: true });
    this.sep = opts.separator || ",";
    this.buf = "";
  }
  _transform(chunk, _enc, cb) {
    this.buf += chunk.toString();
    const lines = this.buf.split("\n");
    this.buf = lines.pop();
    for (const l of lines) this.push(l.split(this.sep));
    cb();
  }
}
util.init();
module.exports = CsvStream;
