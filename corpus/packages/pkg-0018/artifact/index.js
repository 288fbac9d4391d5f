module.exports = {
  rules: {
    curly: "off",
    "no-mixed-spaces-and-tabs": "off",
    quotes: "off",
  },
};
