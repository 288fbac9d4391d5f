import jwt from "jsonwebtoken";
import type { NextFunction, Request, Response } from "express";

const JWT_SECRET = process.env.JWT_SECRET;
if (!JWT_SECRET) throw new Error("JWT_SECRET must be set");

export function issue(user: string): string {
  return jwt.sign({ sub: user }, JWT_SECRET!, { expiresIn: "1h" });
}

export function requireUser(req: Request, res: Response, next: NextFunction): void {
  try {
    const token = (req.headers.authorization ?? "").replace(/^Bearer /, "");
    (req as any).user = jwt.verify(token, JWT_SECRET!, { algorithms: ["HS256"] });
    next();
  } catch {
    res.status(401).json({ error: "unauthorised" });
  }
}
