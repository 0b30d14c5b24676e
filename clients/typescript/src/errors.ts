// Every error the client throws: one class per problem type the gateway
// answers (docs/api.md, "Problems"), each carrying the problem document,
// and the client's own (a lease lost, an answer that is not the gateway's,
// an option refused before anything was sent).

/** The base of every error of this package. */
export class FencegwError extends Error {
  constructor(message?: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * Options refused before anything was sent: no gateway URL, a TTL or wait
 * out of range, an invalid Date, a credential file that cannot be read at
 * start.
 */
export class ConfigurationError extends FencegwError {}

/**
 * The bearer file cannot be read (gone, empty, unreadable): nothing was
 * sent. It is read again before each request, so a file put back ends it.
 */
export class CredentialError extends FencegwError {}

/**
 * An answer that is not the gateway's: a proxy's page of a status other
 * than 502, 503 or 504, a body that does not decode, a success missing what
 * it must hold. What the request did is unknown.
 */
export class UnexpectedResponseError extends FencegwError {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
  constructor(message: string, opts: { status?: number; contentType?: string; body?: string } = {}) {
    super(message);
    this.status = opts.status ?? 0;
    this.contentType = opts.contentType ?? "";
    this.body = opts.body ?? "";
  }
}

/** A lease can no longer be used: the base of LeaseLostError and LeaseReleasedError. */
export class LeaseError extends FencegwError {
  readonly leaseId: string;
  readonly resource: string;
  constructor(message: string, opts: { leaseId?: string; resource?: string; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.leaseId = opts.leaseId ?? "";
    this.resource = opts.resource ?? "";
  }
}

/**
 * The lease is gone: the gateway refused its keepalive (it expired there, or
 * was revoked or released), or its local deadline passed
 * (LeaseExpiredError). Another holder may have the lock: stop working on the
 * resource. The client never takes it again by itself.
 */
export class LeaseLostError extends LeaseError {}

/**
 * The lease's local deadline passed without a successful keepalive. The
 * gateway may still hold it for a while; it will not for long.
 */
export class LeaseExpiredError extends LeaseLostError {}

/** The lease was released (its block ended) and used afterwards. */
export class LeaseReleasedError extends LeaseError {}

/** A problem document (RFC 9457) as the gateway sends it. */
export type ProblemDocument = Record<string, unknown>;

export const PROBLEM_TYPE_PREFIX = "urn:fencegw:problem:";

/**
 * An error answer of the gateway: an RFC 9457 problem document.
 *
 * `problem` is the document as sent; the other properties are its fields
 * (undefined when absent), `status` the answer's HTTP status and `kind` the
 * type's suffix after `urn:fencegw:problem:`.
 */
export class ProblemError extends FencegwError {
  readonly status: number;
  readonly problem: ProblemDocument;
  readonly type: string | undefined;
  readonly kind: string | undefined;
  readonly title: string | undefined;
  readonly detail: string | undefined;
  readonly resource: string | undefined;
  readonly operation: string | undefined;
  readonly role: string | undefined;
  readonly presentedToken: string | undefined;
  readonly currentToken: string | undefined;
  readonly instance: string | undefined;
  /** The write of a batch that refused it. */
  readonly index: number | undefined;

  constructor(status: number, problem: ProblemDocument = {}, message = "") {
    const doc = { ...problem };
    const type = text(doc["type"]);
    const kind = kindOf(type);
    const title = text(doc["title"]);
    const detail = text(doc["detail"]);
    super(message || messageOf(status, kind ?? title ?? "problem", detail));
    this.status = status;
    this.problem = doc;
    this.type = type;
    this.kind = kind;
    this.title = title;
    this.detail = detail;
    this.resource = text(doc["resource"]);
    this.operation = text(doc["operation"]);
    this.role = text(doc["role"]);
    this.presentedToken = text(doc["presented_token"]);
    this.currentToken = text(doc["current_token"]);
    this.instance = text(doc["instance"]);
    const index = doc["index"];
    this.index = Number.isSafeInteger(index) ? (index as number) : undefined;
  }
}

/** bad-request (400): the request is malformed; `detail` says how. */
export class BadRequestError extends ProblemError {}
/** unauthorized (401): no credential, or one that failed a check. */
export class UnauthorizedError extends ProblemError {}
/**
 * token-rejected (403): a token the authority did not issue for this
 * resource and client, of another epoch, or not the live holder's.
 */
export class TokenRejectedError extends ProblemError {}
/**
 * token-retired (403): signed by a key since retired; a client that writes
 * with its keepalives' tokens never meets it. Take a new lease.
 */
export class TokenRetiredError extends TokenRejectedError {}
/** forbidden (403): the client may not call this. */
export class ForbiddenError extends ProblemError {}
/** unknown-operation (404): no such operation in the policy. */
export class UnknownOperationError extends ProblemError {}
/** lease-not-found (404): the gateway no longer has the lease. */
export class LeaseNotFoundError extends ProblemError {}
/** not-found (404): no such endpoint. */
export class NotFoundError extends ProblemError {}
/** no-lock (404): an operator's revoke of a resource nobody holds. */
export class NoLockError extends ProblemError {}
/** method-not-allowed (405). */
export class MethodNotAllowedError extends ProblemError {}
/**
 * stale-token (409): a newer token has written the resource. Stop: your
 * turn is over. `currentToken` names the fence.
 */
export class StaleTokenError extends ProblemError {}
/**
 * deadline-passed (409): the write's notAfter had passed by PostgreSQL's
 * clock; nothing was written, nor will be.
 */
export class DeadlinePassedError extends ProblemError {}
/** precondition-failed (409): a statement's expected rows were not met; nothing was written. */
export class PreconditionFailedError extends ProblemError {}
/** constraint (409): a PostgreSQL constraint refused the write. */
export class ConstraintError extends ProblemError {}
/**
 * locked (409): the wait for the lock ended with another holder, whose
 * token is `holder` (when the gateway can say).
 */
export class LockedError extends ProblemError {
  get holder(): string | undefined {
    return this.currentToken;
  }
}
/** too-large (413): the body is larger than the gateway takes. */
export class TooLargeError extends ProblemError {}
/** unsupported-media-type (415). */
export class UnsupportedMediaTypeError extends ProblemError {}
/** unsupported-encoding (415). */
export class UnsupportedEncodingError extends ProblemError {}
/** idempotency-mismatch (422): the key was used for another request. */
export class IdempotencyMismatchError extends ProblemError {}
/** token-required (428): no token, or none for one of the roles. */
export class TokenRequiredError extends ProblemError {}
/** too-many-leases (429): the client holds as many leases as it may. */
export class TooManyLeasesError extends ProblemError {}
/** internal (500): the gateway failed; its log says why (`instance` names the request). */
export class InternalError extends ProblemError {}
/** application (the status the SQL raised): the operation's own rule refused the write. */
export class ApplicationError extends ProblemError {}

/** What became of a request the gateway could not finish. */
export type Outcome = "not-applied" | "unknown";

/**
 * unavailable (503), or any 502, 503 or 504, or no answer at all.
 *
 * `outcome` says what became of the request: "not-applied" (nothing was
 * written: send it again as it is) or "unknown" (it may have been: send it
 * again only under the same Idempotency-Key, which the client's own retries
 * do). Thrown once the client's retries are spent.
 */
export class UnavailableError extends ProblemError {
  readonly outcome: Outcome;
  constructor(status: number, problem: ProblemDocument = {}, opts: { message?: string; outcome?: Outcome } = {}) {
    super(status, problem, opts.message ?? "");
    const given = this.problem["outcome"];
    this.outcome = opts.outcome ?? (given === "not-applied" || given === "unknown" ? given : "unknown");
  }
}

/**
 * authority-halted (503): etcd went back in time; an operator must act
 * (fencegw epoch bump). Not retried by the client.
 */
export class AuthorityHaltedError extends UnavailableError {}

/**
 * No replica could be reached: every connection failed. `outcome` is
 * "not-applied" when no attempt reached a gateway.
 */
export class GatewayUnreachableError extends UnavailableError {}

type ProblemClass = new (status: number, problem?: ProblemDocument) => ProblemError;

/** The class of each problem type, by the type's suffix. */
export const PROBLEM_CLASSES: Readonly<Record<string, ProblemClass>> = Object.freeze({
  "bad-request": BadRequestError,
  unauthorized: UnauthorizedError,
  "token-rejected": TokenRejectedError,
  "token-retired": TokenRetiredError,
  forbidden: ForbiddenError,
  "unknown-operation": UnknownOperationError,
  "lease-not-found": LeaseNotFoundError,
  "not-found": NotFoundError,
  "no-lock": NoLockError,
  "method-not-allowed": MethodNotAllowedError,
  "stale-token": StaleTokenError,
  "deadline-passed": DeadlinePassedError,
  "precondition-failed": PreconditionFailedError,
  constraint: ConstraintError,
  locked: LockedError,
  "too-large": TooLargeError,
  "unsupported-media-type": UnsupportedMediaTypeError,
  "unsupported-encoding": UnsupportedEncodingError,
  "idempotency-mismatch": IdempotencyMismatchError,
  "token-required": TokenRequiredError,
  "too-many-leases": TooManyLeasesError,
  internal: InternalError,
  application: ApplicationError,
  unavailable: UnavailableError,
  "authority-halted": AuthorityHaltedError,
});

/** An error body beyond this is cut: a problem document is well under 1 KiB. */
export const MAX_ERROR_BODY = 64 << 10;

/**
 * The error an answer of status (not the call's success) describes: the
 * problem's class, UnavailableError for any 502, 503 or 504 that is no
 * problem document, UnexpectedResponseError for anything else that is none.
 */
export function errorFromAnswer(status: number, contentType: string, body: Uint8Array): FencegwError {
  const doc = problemDocument(contentType, body);
  if (doc === undefined) {
    const ct = printable(contentType, 64) || "no content type";
    const txt = printable(new TextDecoder().decode(body.subarray(0, MAX_ERROR_BODY)), 200);
    const msg = `${status} (${ct}), not a problem document${txt ? ": " + txt : ""}`;
    if (status === 502 || status === 503 || status === 504) {
      return new UnavailableError(status, {}, { message: msg, outcome: "unknown" });
    }
    return new UnexpectedResponseError(msg, { status, contentType, body: txt });
  }
  const kind = kindOf(text(doc["type"]));
  const cls = kind !== undefined ? PROBLEM_CLASSES[kind] : undefined;
  if (cls !== undefined) {
    return new cls(status, doc);
  }
  // A type this client does not know (a policy's own, a newer gateway's) or
  // none: the status still says what it can.
  if (status === 502 || status === 503 || status === 504) {
    return new UnavailableError(status, doc);
  }
  return new ProblemError(status, doc);
}

function problemDocument(contentType: string, body: Uint8Array): ProblemDocument | undefined {
  const media = (contentType.split(";", 1)[0] ?? "").trim().toLowerCase();
  if (media !== "application/problem+json") {
    return undefined;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch {
    return undefined;
  }
  return isObject(doc) ? doc : undefined;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function text(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

function kindOf(type: string | undefined): string | undefined {
  if (type !== undefined && type.startsWith(PROBLEM_TYPE_PREFIX) && type.length > PROBLEM_TYPE_PREFIX.length) {
    return type.slice(PROBLEM_TYPE_PREFIX.length);
  }
  return undefined;
}

function messageOf(status: number, name: string, detail: string | undefined): string {
  let msg = `${status} ${printable(name, 64)}`;
  if (detail) {
    msg += ": " + printable(detail, 512);
  }
  return msg;
}

/**
 * Untrusted text made safe for a message: no control characters, runs of
 * white space as one space, cut to about limit characters.
 */
export function printable(s: string, limit: number): string {
  let out = "";
  let n = 0;
  let space = false;
  for (let ch of s) {
    if (/\s/u.test(ch)) {
      space = n > 0;
      continue;
    }
    if (/[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/u.test(ch)) {
      ch = "?";
    }
    const add = ch.length + (space ? 1 : 0);
    if (n + add > limit) {
      out += "…";
      break;
    }
    if (space) {
      out += " ";
      space = false;
    }
    out += ch;
    n += add;
  }
  return out;
}
