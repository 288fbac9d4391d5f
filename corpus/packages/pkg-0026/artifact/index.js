const binding = require("node-gyp-build")(__dirname);

exports.hash = (password, rounds = 10) => binding.hashSync(String(password), rounds);
exports.compare = (password, hash) => binding.compareSync(String(password), String(hash));
