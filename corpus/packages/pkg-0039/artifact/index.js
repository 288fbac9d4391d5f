module.exports = { version: "28.1.0" };
