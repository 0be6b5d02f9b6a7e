import { networkInterfaces } from 'node:os';
import { describe, expect, it } from 'vitest';
import { localAddressToward, weightSyncMasterAddress } from './weight-sync-address.ts';

/** This machine's first non-loopback IPv4 address, if it has one. */
const external = Object.values(networkInterfaces())
  .flat()
  .find((entry) => entry !== undefined && !entry.internal && entry.family === 'IPv4')?.address;

describe("the weight update group's master address", () => {
  it('engines on this machine reach a trainer started here on loopback', async () => {
    expect(
      await weightSyncMasterAddress({
        given: null,
        trainerUrl: null,
        engineUrls: ['http://127.0.0.1:30000'],
      }),
    ).toEqual({ address: '127.0.0.1' });
  });

  it.skipIf(external === undefined)(
    "an engine elsewhere gets this host's address on the kernel's route to it, not loopback",
    async () => {
      const address = external as string;
      expect(await localAddressToward(address)).toBe(address);
      expect(
        await weightSyncMasterAddress({
          given: null,
          trainerUrl: null,
          engineUrls: [`http://${address}:30000`],
        }),
      ).toEqual({ address });
    },
  );

  it('--weight-sync-address wins; a trainer by URL is reached at its host', async () => {
    const engines = ['http://10.1.2.3:30000'];
    expect(
      await weightSyncMasterAddress({ given: '10.0.0.9', trainerUrl: null, engineUrls: engines }),
    ).toEqual({
      address: '10.0.0.9',
    });
    expect(
      await weightSyncMasterAddress({
        given: null,
        trainerUrl: 'http://10.0.0.7:31000',
        engineUrls: engines,
      }),
    ).toEqual({ address: '10.0.0.7' });
  });

  it('a loopback master with an engine elsewhere is refused, naming --weight-sync-address', async () => {
    const engines = ['http://127.0.0.1:30000', 'http://10.1.2.3:30000'];
    for (const input of [
      { given: null, trainerUrl: 'http://127.0.0.1:31000' },
      { given: 'localhost', trainerUrl: null },
    ]) {
      const answer = await weightSyncMasterAddress({ ...input, engineUrls: engines });
      expect(answer).toEqual({ refusal: expect.stringContaining('http://10.1.2.3:30000 cannot reach') });
      expect(answer).toEqual({ refusal: expect.stringContaining('give --weight-sync-address HOST') });
    }
  });
});
