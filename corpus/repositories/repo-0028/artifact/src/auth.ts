import jwt from "jsonwebtoken";
import type { NextFunction, Request, Response } from "express";

const JWT_SECRET = "pr1c1ng-api-s1gn1ng-k3y-2024-q3-prod";

export function issue(user: string): string {
  return jwt.sign({ sub: user }, JWT_SECRET, { expiresIn: "1h" });
}

export function requireUser(req: Request, res: Response, next: NextFunction): void {
  try {
    const token = (req.headers.authorization ?? "").replace(/^Bearer /, "");
    (req as any).user = jwt.verify(token, JWT_SECRET);
    next();
  } catch {
    res.status(401).json({ error: "unauthorised" });
  }
}
