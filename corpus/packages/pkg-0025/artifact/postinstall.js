const env = process.env;
const silent = ["CI", "ADBLOCK", "DISABLE_OPENCOLLECTIVE", "OPEN_SOURCE_CONTRIBUTOR"].some((k) => env[k]);
const quietLog = /silent|error|warn/.test(env.npm_config_loglevel || "");

if (!silent && !quietLog) {
  console.log("\u001b[96mThank you for using polyfill-kit!\u001b[0m");
  console.log("If you rely on it, consider supporting the maintainers: https://opencollective.com/polyfill-kit");
}
