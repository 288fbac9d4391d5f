import express from "express";
import { cachedImage, fetchImage } from "./assets.js";

const app = express();
app.get("/image", fetchImage);
app.get("/cache/:name", cachedImage);
app.listen(3333, "127.0.0.1");
