// spdy-transport ships no types: the part of its API podctl uses (SPDY/3.1 framing for Kubernetes' streams).
declare module 'spdy-transport' {
  import type { Duplex } from 'node:stream';
  import type { EventEmitter } from 'node:events';

  export interface SpdyStream extends Duplex {
    id: number;
    headers: Record<string, string | undefined>;
    respond(status: number, headers: Record<string, string>, callback?: (err?: Error) => void): void;
    abort(callback?: () => void): void;
    on(event: 'response', listener: (status: number, headers: Record<string, string>) => void): this;
    on(event: string | symbol, listener: (...args: never[]) => void): this;
  }

  export interface SpdyConnection extends EventEmitter {
    socket: Duplex;
    start(version: number): void;
    request(
      uri: { method?: string; path?: string; host?: string; headers?: Record<string, string>; writable?: boolean },
      callback?: (err: Error | null, stream: SpdyStream) => void,
    ): SpdyStream;
    end(callback?: () => void): void;
    /** Called once the peer answered the PING. */
    ping(callback: (err?: Error) => void): void;
    destroyStreams(err?: Error): void;
    on(event: 'stream', listener: (stream: SpdyStream) => void): this;
    on(event: string | symbol, listener: (...args: never[]) => void): this;
  }

  export interface SpdyProtocol {
    name: string;
    parser: { create(options: unknown): SpdyParser };
    [key: string]: unknown;
  }

  export interface SpdyParser {
    onSynHeadFrame(type: number, flags: number, body: unknown, callback: (...args: unknown[]) => void): void;
    parseKVs(body: unknown, callback: (err: Error | null, headers?: Record<string, string>) => void): void;
  }

  const transport: {
    protocol: Record<string, SpdyProtocol>;
    connection: {
      create(socket: Duplex, options: { protocol: string; isServer: boolean; windowSize?: number; maxStreams?: number }): SpdyConnection;
    };
  };
  export default transport;
}
