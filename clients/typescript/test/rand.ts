// A seeded random source, so that a bounded fuzz fails the same way twice.

export class Rand {
  constructor(private s: number) {}

  /** An integer in [0, n). */
  int(n: number): number {
    // mulberry32
    this.s = (this.s + 0x6d2b79f5) | 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  }

  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)] as T;
  }

  /** seed with 1 to 3 random edits: cuts, insertions of snippets, byte changes. */
  mutate(seed: Buffer, snippets: readonly string[]): Buffer {
    let b = Buffer.from(seed);
    for (let k = 1 + this.int(3); k > 0; k--) {
      const pos = this.int(b.length + 1);
      const op = this.int(3);
      if (op === 0) {
        b = Buffer.concat([b.subarray(0, pos), b.subarray(pos + 1 + this.int(8))]);
      } else if (op === 1) {
        b = Buffer.concat([b.subarray(0, pos), Buffer.from(this.pick(snippets)), b.subarray(pos)]);
      } else if (pos < b.length) {
        b[pos] = this.int(256);
      }
    }
    return b;
  }
}

/** Is s free of control characters and line breaks? */
export function printableText(s: string): boolean {
  return !/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u.test(s);
}
