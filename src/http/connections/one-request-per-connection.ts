import { randomUUID } from 'node:crypto'
import http, { STATUS_CODES, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { problemBody, type ProblemCode } from '../problems/problem.js'

/**
 * One request at a time per connection.
 *
 * node:http parses every request a client pipelines in one write and hands each to the app at
 * once; responses that are not yet the connection's turn are kept in memory until the client reads
 * the ones before them. A client that pipelines a thousand list requests and never reads made the
 * process compute and hold all thousand answers (gigabytes), and a response that never got its turn
 * was never closed when the client left, so a streamed file stayed open for good.
 *
 * node:http already keeps a connection's responses in line: the first owns the socket, the others
 * get it (and emit 'socket') only once the one before has been written out ('finish': the kernel
 * took its last byte). So a request whose response does not own the socket yet is handed to the
 * app only when it does; meanwhile it waits untouched (no route ran, nothing was read from
 * storage) and the socket stops reading. A client that does not read holds one response, and a
 * response handed to the app always owns the socket, which closes it when the client goes. The
 * usual request, alone on its connection, owns the socket from the start and costs one check.
 */
const kWaiting = Symbol('requests waiting for their turn')

type Carrier = Socket & { [kWaiting]?: number }

export function inTurn (handler: RequestListener): RequestListener {
  return (req, res) => {
    if (res.socket !== null) {
      answer(handler, req, res)
      return
    }
    const socket = req.socket as Carrier
    socket[kWaiting] = (socket[kWaiting] ?? 0) + 1
    socket.pause()
    res.once('socket', () => {
      socket[kWaiting]! -= 1
      if (socket[kWaiting] === 0 && !socket.destroyed) socket.resume()
      answer(handler, req, res)
    })
  }
}

function answer (handler: RequestListener, req: IncomingMessage, res: ServerResponse): void {
  // node:http would answer an HTTP/1.1 request without Host itself, with an empty 400 (RFC 9112 3.2).
  if (req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor === 1) {
    sendRaw(res, 400, 'invalid-input', 'An HTTP/1.1 request must carry a Host header', true)
    return
  }
  handler(req, res)
}

/** A problem body written straight to node's response, for answers given before Fastify sees the request. */
export function sendRaw (res: ServerResponse, status: number, code: ProblemCode, detail: string, close: boolean): void {
  const requestId = randomUUID()
  const body = JSON.stringify(problemBody(status, code, requestId, detail))
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-request-id': requestId,
    'x-content-type-options': 'nosniff',
    ...(close ? { connection: 'close' } : {})
  })
  res.end(body)
}

/**
 * An answer written straight to a socket no request owns (a parser refusal, a header timeout, one
 * connection too many), then the socket destroyed once the answer is flushed: `end()` alone only
 * half-closed it, and a client that never closed its side kept the descriptor.
 */
export function answerAndClose (socket: Socket, status: number, code: ProblemCode, detail: string, retryAfter?: number): void {
  const body = JSON.stringify(problemBody(status, code, randomUUID(), detail))
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
    (retryAfter === undefined ? '' : `retry-after: ${retryAfter}\r\n`) +
    `content-length: ${Buffer.byteLength(body)}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n${body}`, () => socket.destroy())
}

/**
 * Fastify's serverFactory: the HTTP server Fastify would build (same options and timeouts), with
 * requests taken in turn per connection and the answers node:http gives by itself in the contract's shape.
 */
/** The options Fastify hands its serverFactory: its own, as given to Fastify(). */
interface ServerOptions { http?: http.ServerOptions, keepAliveTimeout?: number, requestTimeout?: number, connectionTimeout?: number }

export function connectionTurns (handler: RequestListener, options: ServerOptions): http.Server {
  // requireHostHeader off: the Host check above answers in the contract's shape instead of node's empty 400.
  const server = http.createServer({ ...options.http, requireHostHeader: false }, inTurn(handler))
  if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout
  if (options.requestTimeout !== undefined) server.requestTimeout = options.requestTimeout
  if (options.connectionTimeout !== undefined) server.setTimeout(options.connectionTimeout)
  // Expect: 100-continue: node would send 100 Continue at once, so a client sent a photo's
  // megabytes even to be refused (401, 413, 415, 503, an unknown plant) and the connection was cut
  // mid-body. It is sent when the body is first read instead: a refusal that needs no body is
  // answered before the client sends it.
  server.on('checkContinue', inTurn((req, res) => {
    const reading = (event: string | symbol): void => {
      if (event !== 'data' && event !== 'readable') return
      req.off('newListener', reading)
      if (!res.headersSent) res.writeContinue()
    }
    req.on('newListener', reading)
    handler(req, res)
  }))
  // An Expect other than 100-continue: node would answer an empty 417. In turn like any request.
  server.on('checkExpectation', inTurn((_req, res) => {
    sendRaw(res, 417, 'invalid-input', 'The only expectation this service meets is Expect: 100-continue', false)
  }))
  return server
}
