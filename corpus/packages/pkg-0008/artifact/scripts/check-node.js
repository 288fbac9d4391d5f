// Warn early when the Node version is too old; touches nothing else.
const major = Number(process.versions.node.split(".")[0]);
if (major < 18) {
  console.warn(`chartkit-lite needs Node 18 or newer (found ${process.versions.node}).`);
} else {
  console.log("chartkit-lite installed. Docs: https://chartkit.example/docs");
}
