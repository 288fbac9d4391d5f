const axios = require("axios");
const express = require("express");

const STRIPE_API_KEY = "sk_live_4eC39HqLyjWDarjtT1zdp7dcXk2Rm9QpL0";
const router = express.Router();

router.post("/webhooks/test", async (req, res) => {
  const response = await axios.get(req.body.callbackUrl, { timeout: 3000 });
  res.json({ status: response.status });
});

router.get("/billing/ping", async (req, res) => {
  const response = await axios.get("https://api.stripe.com/v1/balance", {
    headers: { Authorization: `Bearer ${STRIPE_API_KEY}` },
  });
  res.json(response.data);
});

module.exports = router;
