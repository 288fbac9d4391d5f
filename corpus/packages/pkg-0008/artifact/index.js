function bars(values, width = 200) {
  const max = Math.max(...values, 1);
  return values
    .map((v, i) => `<rect x="0" y="${i * 12}" width="${(v / max) * width}" height="10"/>`)
    .join("");
}

module.exports = { bars };
