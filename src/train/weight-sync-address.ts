/**
 * Where the engines reach the weight update group's master, the trainer's rank 0, which hosts the
 * group's rendezvous store (every engine connects to it at `master_address:master_port`):
 * `--weight-sync-address` when given; else, for a trainer started here, the address this host
 * uses to reach the first engine, as the kernel's routing table picks it (a UDP socket connected
 * towards the engine; no packet is sent), so an engine on another machine gets this host's
 * address on the way to it, never loopback; for a trainer by URL, that URL's host. A loopback
 * master with an engine elsewhere is refused: that engine would connect to its own loopback and
 * block its scheduler in the rendezvous.
 */
import { createSocket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/** The local address the kernel would send from to reach `host` (resolved first when a name). */
export async function localAddressToward(host: string): Promise<string> {
  const bare = host.replace(/^\[|\]$/g, '');
  const address = isIP(bare) === 0 ? (await lookup(bare)).address : bare;
  const socket = createSocket(isIP(address) === 6 ? 'udp6' : 'udp4');
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.connect(9, address, () => resolve());
    });
    return socket.address().address;
  } finally {
    socket.close();
  }
}

/** Whether `host` names this machine's loopback only. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare.endsWith('.localhost') || bare === '::1' || /^127\./.test(bare);
}

/** The group's master address, or a refusal (a string) saying what to give instead. */
export async function weightSyncMasterAddress({
  given,
  trainerUrl,
  engineUrls,
}: {
  given: string | null;
  trainerUrl: string | null;
  engineUrls: readonly string[];
}): Promise<{ address: string } | { refusal: string }> {
  const remote = engineUrls.filter((url) => !isLoopbackHost(new URL(url).hostname));
  const address =
    given ??
    (trainerUrl !== null
      ? new URL(trainerUrl).hostname.replace(/^\[|\]$/g, '')
      : engineUrls.length === 0
        ? '127.0.0.1'
        : await localAddressToward(new URL(engineUrls[0] as string).hostname));
  if (isLoopbackHost(address) && remote.length > 0) {
    return {
      refusal: `the weight update group's master would be ${address}, which ${remote.join(', ')} cannot reach (each would connect to its own loopback): give --weight-sync-address HOST, the trainer's address as the engines reach it`,
    };
  }
  return { address };
}
