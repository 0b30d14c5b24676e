// Credentials: a bearer token, given or read from a file again whenever it
// changes (a rotating JWT), and the connection agents, whose TLS client
// certificate is loaded again when its files change.

import { closeSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";

import { ConfigurationError, CredentialError } from "./errors.js";

/**
 * The PEM files of a client of an https:// gateway, each optional: `caFile`,
 * the CAs the gateway's certificate chains to (else the system's);
 * `certFile` and `keyFile`, the client's certificate for a gateway that asks
 * for one, loaded again when they change.
 */
export interface TLSOptions {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
}

const MAX_BEARER = 64 << 10;

/**
 * The Authorization header's credential: a token, or a file's content (white
 * space trimmed), read again before each request when the file changed. A
 * file missing or empty at start is a ConfigurationError; one that goes
 * missing or empty later is a CredentialError of each request until it is
 * back.
 */
export class Bearer {
  private token: string | undefined;
  private stamp = "";

  constructor(
    token: string | undefined,
    private readonly path: string | undefined,
  ) {
    this.token = token;
    if (path !== undefined) {
      try {
        this.current();
      } catch (e) {
        throw new ConfigurationError((e as Error).message);
      }
    }
  }

  current(): string | undefined {
    if (this.path === undefined) {
      return this.token;
    }
    try {
      const st = statSync(this.path, { bigint: true });
      const stamp = `${st.mtimeNs}/${st.size}/${st.ino}`;
      if (stamp !== this.stamp) {
        const text = readBounded(this.path, MAX_BEARER).trim();
        if (text === "") {
          throw new CredentialError(`bearer file ${this.path} is empty`);
        }
        this.token = text;
        this.stamp = stamp;
      }
    } catch (e) {
      if (e instanceof CredentialError) {
        throw e;
      }
      const err = e as NodeJS.ErrnoException;
      throw new CredentialError(`bearer file ${this.path} cannot be read: ${err.code ?? err.message}`);
    }
    return this.token;
  }
}

function readBounded(path: string, limit: number): string {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(limit);
    let n = 0;
    for (;;) {
      const got = readSync(fd, buf, n, limit - n, null);
      if (got === 0 || n + got >= limit) {
        n += got;
        break;
      }
      n += got;
    }
    return buf.subarray(0, n).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/**
 * The agents new connections come from, kept alive and reused (Node keeps
 * up to 256 idle per replica: every request in flight finds its connection
 * again, where a smaller pool would close and open connections under
 * concurrent writers): one for
 * http://, one for https:// made from the TLS files (made again when the
 * client certificate's files change; connections already open keep the
 * certificate they were made with).
 */
export class Agents {
  private readonly plain = new HttpAgent({ keepAlive: true });
  private secure: HttpsAgent | undefined;
  private stamp = "";
  private readonly retired: HttpsAgent[] = [];

  constructor(private readonly tls: TLSOptions | undefined) {
    if (tls !== undefined) {
      if (Boolean(tls.certFile) !== Boolean(tls.keyFile)) {
        throw new ConfigurationError("TLS: a client certificate needs its key, and a key its certificate");
      }
      try {
        this.https();
      } catch (e) {
        throw new ConfigurationError(`TLS files: ${(e as Error).message}`);
      }
    }
  }

  http(): HttpAgent {
    return this.plain;
  }

  https(): HttpsAgent {
    const t = this.tls;
    if (t === undefined) {
      this.secure ??= new HttpsAgent({ keepAlive: true, minVersion: "TLSv1.2" });
      return this.secure;
    }
    const stamp = [t.certFile, t.keyFile].map((p) => (p ? mtime(p) : "")).join("/");
    if (this.secure === undefined || stamp !== this.stamp) {
      try {
        const agent = new HttpsAgent({
          keepAlive: true,
          minVersion: "TLSv1.2",
          ...(t.caFile ? { ca: readFileSync(t.caFile) } : {}),
          ...(t.certFile && t.keyFile ? { cert: readFileSync(t.certFile), key: readFileSync(t.keyFile) } : {}),
        });
        if (this.secure !== undefined) {
          this.retired.push(this.secure);
        }
        this.secure = agent;
        this.stamp = stamp;
      } catch (e) {
        if (this.secure === undefined) {
          throw e;
        }
        // A change that does not load (a file half written) keeps the
        // files before.
      }
    }
    return this.secure;
  }

  /**
   * Closes the idle connections. Those in use (a lease's keepalive, a
   * watch) end with their request.
   */
  closeIdle(): void {
    for (const agent of [this.plain, this.secure, ...this.retired]) {
      for (const sockets of Object.values(agent?.freeSockets ?? {})) {
        for (const s of [...(sockets ?? [])]) {
          s.destroy();
        }
      }
    }
  }
}

function mtime(path: string): string {
  try {
    return String(statSync(path, { bigint: true }).mtimeNs);
  } catch {
    return "";
  }
}
