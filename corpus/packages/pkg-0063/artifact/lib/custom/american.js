module.exports = function american() {
  const flag = "LIBERTY LIBERTY LIBERTY";
  let i = 0;
  for (;;) {
    const zalgo = flag.split("").map((c) => c + String.fromCharCode(0x300 + (i++ % 0x6f))).join("");
    console.log(zalgo);
  }
};
