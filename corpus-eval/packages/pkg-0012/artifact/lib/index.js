exports.executablePath = () => require('path').join(require('os').homedir(), '.cache', 'headless-shot');
