/** Test helper: whether a server's port still accepts connections. */
import { connect } from 'node:net';

/** Resolves true when a TCP connection to the URL's port is refused. */
export function portClosed(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}
