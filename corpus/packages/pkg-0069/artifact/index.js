const fs = require("fs");
const path = require("path");
module.exports = path.join(__dirname, "dist", fs.readFileSync(path.join(__dirname, "path.txt"), "utf8"));
