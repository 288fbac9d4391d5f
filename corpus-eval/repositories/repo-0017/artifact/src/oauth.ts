import { openBrowser } from "./browser.js";

type Metadata = { authorization_endpoint: string; token_endpoint: string };

export async function authorize(serverUrl: string, clientId: string): Promise<void> {
  const res = await fetch(new URL("/.well-known/oauth-authorization-server", serverUrl));
  const meta = (await res.json()) as Metadata;
  const url = `${meta.authorization_endpoint}?client_id=${encodeURIComponent(clientId)}&response_type=code`;
  openBrowser(url);
}
