// The few parts of autocannon's API the bench uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'
  namespace autocannon {
    interface Request {
      method?: string
      path?: string
      headers?: Record<string, string>
      body?: string
      setupRequest?: (request: Request, context: Record<string, unknown>) => Request
    }
    interface Options { url: string, connections?: number, duration?: number, headers?: Record<string, string>, requests?: Request[] }
    interface Result {
      duration: number
      requests: { total: number }
      errors: number
      timeouts: number
      non2xx: number
      '2xx': number
    }
    type Instance = EventEmitter & PromiseLike<Result>
  }
  function autocannon (options: autocannon.Options): autocannon.Instance
  export default autocannon
}
