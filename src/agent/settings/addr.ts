/** A tunnel's `addr`: a port, host:port or URL, turned into the URL the agent forwards to. */

export type AddrResult = { ok: true; url: URL } | { ok: false; message: string };

const PORT = /^\d{1,5}$/;

function portOk(port: string): boolean {
  const value = Number(port);
  return Number.isInteger(value) && value >= 1 && value <= 65535;
}

/** `3000` → http://localhost:3000; `10.0.0.2:8080` → http://10.0.0.2:8080; `https://localhost:8443` stays. */
export function parseAddr(addr: string | number): AddrResult {
  const text = String(addr).trim();
  if (PORT.test(text)) {
    return portOk(text) ? { ok: true, url: new URL(`http://localhost:${Number(text)}`) } : { ok: false, message: `port ${text} is out of range (1 to 65535)` };
  }
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    return { ok: false, message: `${JSON.stringify(text)} is not a port, host:port or URL` };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    return { ok: false, message: `scheme ${url.protocol.slice(0, -1)} is not supported (http or https)` };
  if (url.username || url.password) return { ok: false, message: "must not contain credentials" };
  if (url.pathname !== "/" || url.search || url.hash) return { ok: false, message: "must not have a path, query or fragment" };
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text) && !/:\d+$/.test(text)) return { ok: false, message: `${JSON.stringify(text)} needs a port (host:port)` };
  return { ok: true, url };
}

/** How an address is shown (`config.addr`, `forwards_to`): the URL's origin. */
export function addrDisplay(url: URL): string {
  return url.origin;
}
