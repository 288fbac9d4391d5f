module.exports = (s) => [...String(s)].length;
