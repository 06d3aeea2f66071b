// A fake clock for the built program, loaded with NODE_OPTIONS=--import: the wall clock stands at
// FAKE_CLOCK_START_MS (epoch ms), so a test plays a simulated day of one-shot collections, each at
// its exact time, without waiting for it. Only Date is replaced: timers and monotonic clocks stay
// real (a deadline computed from Date.now() gets its full length). Without the variable nothing changes.
const start = Number(process.env.FAKE_CLOCK_START_MS);
if (process.env.FAKE_CLOCK_START_MS && Number.isFinite(start)) {
  const RealDate = Date;
  const fakeNow = () => start;
  class FakeDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(fakeNow());
      else super(...args);
    }
    static now() {
      return fakeNow();
    }
  }
  globalThis.Date = FakeDate;
}
