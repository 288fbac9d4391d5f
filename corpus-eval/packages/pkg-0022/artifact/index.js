module.exports = function detect(ua) {
  ua = String(ua || "");
  if (/Firefox\/(\d+)/.test(ua)) return { browser: "firefox", version: RegExp.$1 };
  if (/Chrome\/(\d+)/.test(ua)) return { browser: "chrome", version: RegExp.$1 };
  if (/Safari\//.test(ua)) return { browser: "safari" };
  return { browser: "unknown" };
};
