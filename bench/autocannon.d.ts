/**
 * The part of autocannon 9's API the benchmark uses (the package ships no types).
 * @module
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  export interface RequestParams {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string | Buffer
  }

  export interface RequestStep<C> {
    /** Called before each request of a connection; returns the request to send. */
    setupRequest?: (request: RequestParams, context: C) => RequestParams | undefined
    onResponse?: (status: number, body: string, context: C, headers: Record<string, string>) => void
  }

  export interface Options<C = Record<string, unknown>> {
    url: string
    connections?: number
    /** Seconds. */
    duration?: number
    /** Stop after this many requests overall (spread evenly over the connections). */
    maxOverallRequests?: number
    /** Seconds before a request counts as timed out. */
    timeout?: number
    pipelining?: number
    requests?: Array<RequestStep<C>>
    initialContext?: C
  }

  export interface Histogram {
    average: number
    mean: number
    stddev: number
    min: number
    max: number
    total: number
    p50: number
    p90: number
    p99: number
  }

  export interface Result {
    /** Seconds. */
    duration: number
    start: Date
    finish: Date
    errors: number
    timeouts: number
    non2xx: number
    resets: number
    mismatches: number
    '1xx': number
    '2xx': number
    '3xx': number
    '4xx': number
    '5xx': number
    latency: Histogram
    requests: Histogram & { sent: number }
    statusCodeStats: Record<string, { count: number }>
  }

  export interface Instance extends EventEmitter {
    stop(): void
  }

  function autocannon<C>(
    options: Options<C>,
    callback: (err: Error | null, result: Result) => void,
  ): Instance

  export default autocannon
}
