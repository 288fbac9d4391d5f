module.exports = function sendSms(client, from, to, body) {
  return client.messages.create({ from, to, body });
};
