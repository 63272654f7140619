/**
 * The soak's one source of chance: a small seeded generator (sfc32, seeded through a string hash),
 * so that a seed names a run. Each part of the plan draws from its own named stream
 * ({@link Rng.stream}): changing the load rate leaves the fault schedule as it was, and the
 * other way round.
 * @module
 */

/** 32-bit hashes of a string (cyrb128): four seed words for sfc32. */
function seedWords(text: string): [number, number, number, number] {
  let h1 = 1779033703
  let h2 = 3144134277
  let h3 = 1013904242
  let h4 = 2773480762
  for (let i = 0; i < text.length; i++) {
    const k = text.charCodeAt(i)
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067)
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233)
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213)
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179)
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067)
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233)
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213)
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179)
  return [(h1 ^ h2 ^ h3 ^ h4) >>> 0, (h2 ^ h1) >>> 0, (h3 ^ h1) >>> 0, (h4 ^ h1) >>> 0]
}

export class Rng {
  private a: number
  private b: number
  private c: number
  private d: number

  constructor(readonly seed: string) {
    ;[this.a, this.b, this.c, this.d] = seedWords(seed)
    // The first outputs of sfc32 still echo the seed words.
    for (let i = 0; i < 15; i++) this.next()
  }

  /** An independent generator for one part of the plan, the same for the same seed and name. */
  stream(name: string): Rng {
    return new Rng(`${this.seed}/${name}`)
  }

  /** A float in [0, 1). */
  next(): number {
    this.a >>>= 0
    this.b >>>= 0
    this.c >>>= 0
    this.d >>>= 0
    const t = (((this.a + this.b) | 0) + this.d) | 0
    this.d = (this.d + 1) | 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) | 0
    this.c = (this.c << 21) | (this.c >>> 11)
    this.c = (this.c + t) | 0
    return (t >>> 0) / 4294967296
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1))
  }

  /** A float in [min, max). */
  between(min: number, max: number): number {
    return min + this.next() * (max - min)
  }

  chance(p: number): boolean {
    return this.next() < p
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)]
    if (item === undefined) throw new Error('pick from an empty list')
    return item
  }

  /** One of `choices`, each as likely as its weight. */
  weighted<T>(choices: ReadonlyArray<readonly [T, number]>): T {
    const total = choices.reduce((sum, [, weight]) => sum + weight, 0)
    let point = this.next() * total
    for (const [item, weight] of choices) {
      point -= weight
      if (point < 0) return item
    }
    const last = choices[choices.length - 1]
    if (!last) throw new Error('weighted pick from an empty list')
    return last[0]
  }
}

/** A fresh seed for a run that was given none: short, printable, easy to paste back. */
export function randomSeed(): string {
  return Math.floor(Math.random() * 2 ** 32)
    .toString(36)
    .padStart(7, '0')
}
