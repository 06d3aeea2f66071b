/**
 * A bounded list that keeps an even spread of everything pushed: when it is full, every other item
 * is dropped and from then on only every 2nd (then 4th…) item pushed is kept. A week-long job's
 * series stays within `cap` items; what is kept still spans the whole run, at a coarser step.
 */
export class Thinned<T> {
  private kept: T[] = [];
  private stride = 1;
  private seen = 0;
  private latest: T | undefined;

  constructor(private readonly cap: number) {}

  push(item: T): void {
    this.latest = item;
    if (this.seen++ % this.stride !== 0) return;
    this.kept.push(item);
    if (this.kept.length >= this.cap) {
      this.kept = this.kept.filter((_, i) => i % 2 === 0);
      this.stride *= 2;
    }
  }

  /** What is kept, with the latest item pushed always last. */
  items(): T[] {
    const last = this.kept[this.kept.length - 1];
    return this.latest !== undefined && last !== this.latest ? [...this.kept, this.latest] : [...this.kept];
  }
}
