// A TCP proxy the test controls, between the service and PostgreSQL: cutting
// it is a database outage for the service alone (the shared server keeps
// running for every other test).
import { once } from 'node:events'
import { createConnection, createServer } from 'node:net'
import type { AddressInfo, Server, Socket } from 'node:net'

export interface TcpProxy {
  port: number
  /** Drops every connection and refuses new ones. */
  cut (): Promise<void>
  /** Accepts connections again, on the same port. */
  restore (): Promise<void>
  close (): Promise<void>
}

export async function tcpProxy (targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>()
  let server: Server | undefined
  let port = 0

  const listen = async () => {
    server = createServer((client) => {
      const upstream = createConnection(targetPort, targetHost)
      for (const socket of [client, upstream]) {
        sockets.add(socket)
        socket.on('close', () => sockets.delete(socket))
        socket.on('error', () => { client.destroy(); upstream.destroy() })
      }
      client.pipe(upstream).pipe(client)
    })
    server.listen(port, '127.0.0.1')
    await once(server, 'listening')
    port = (server.address() as AddressInfo).port
  }
  const cut = async () => {
    const closed = server && new Promise((resolve) => server!.close(resolve))
    for (const socket of sockets) socket.destroy()
    await closed
    server = undefined
  }

  await listen()
  return { port, cut, restore: listen, close: cut }
}
