import { copyFile, cp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hostAt } from '../../src/host/host.js';
import { watchXids } from '../../src/xid/watch.js';
import { FIXTURES, tempDir } from '../support/helpers.js';

// Which of the two counts, the kernel log or NVML's events, as the log becomes readable or stays not:
// a copy of test/fixtures/hosts/xid-kmsg (GPU 0 at 0000:00:06 logged 79 once, GPU 1 at 0000:00:07 13 twice).

const NVML = ['0000:00:06', '0000:00:07'];
const LOGGED_79 = "4,700,9999000000,-;NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n";

async function host() {
  const root = join(await tempDir(), 'host');
  await cp(join(FIXTURES, 'hosts/xid-kmsg'), root, { recursive: true });
  const kmsg = join(root, 'dev/kmsg');
  await copyFile(kmsg, `${kmsg}.saved`);
  await rm(kmsg);
  return { host: hostAt(root), kmsg };
}

describe('watchXids with NVML events', () => {
  it('log unreadable: NVML counts, only for the GPUs it watches; nothing given, nothing counts', async () => {
    const watch = watchXids((await host()).host, undefined);
    expect(watch.poll()).toEqual({ up: false, state: undefined });
    const poll = watch.poll({ buses: NVML, events: [{ bus: '0000:00:06', xid: 79 }] });
    expect(poll).toMatchObject({ up: true, nvml: { buses: NVML }, state: { counts: [{ bus: '0000:00:06', xid: 79, count: 1 }] } });
    expect(watch.poll({ buses: NVML, events: [] }).state?.counts).toEqual([{ bus: '0000:00:06', xid: 79, count: 1 }]);
  });

  it('log readable: it counts, and the events NVML gives are dropped', async () => {
    const { host: h, kmsg } = await host();
    await copyFile(`${kmsg}.saved`, kmsg);
    const poll = watchXids(h, undefined).poll({ buses: NVML, events: [{ bus: '0000:00:06', xid: 79 }] });
    expect(poll.nvml).toBeUndefined();
    expect(poll.state?.counts).toEqual([
      { bus: '0000:00:07', xid: 13, count: 2 },
      { bus: '0000:00:06', xid: 79, count: 1 },
    ]);
  });

  it("the log becomes readable: NVML's last events count, the log's backlog (NVML counted it) does not, new lines do", async () => {
    const { host: h, kmsg } = await host();
    const watch = watchXids(h, undefined);
    watch.poll({ buses: NVML, events: [{ bus: '0000:00:07', xid: 13 }] });
    await copyFile(`${kmsg}.saved`, kmsg);
    const switched = watch.poll({ buses: NVML, events: [{ bus: '0000:00:07', xid: 13 }] });
    expect([switched.up, switched.nvml, switched.state?.counts]).toEqual([true, undefined, [{ bus: '0000:00:07', xid: 13, count: 2 }]]);
    await writeFile(kmsg, LOGGED_79, { flag: 'a' });
    expect(watch.poll({ buses: NVML, events: [{ bus: '0000:00:06', xid: 79 }] }).state?.counts).toEqual([
      { bus: '0000:00:07', xid: 13, count: 2 },
      { bus: '0000:00:06', xid: 79, count: 1 },
    ]);
  });
});
