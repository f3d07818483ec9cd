import { Writable } from 'node:stream'

export type LogLine = Record<string, any>

/** A stream to hand buildApp as its log, and the JSON lines written to it so far. */
export function logCollector (): { stream: Writable, lines: () => LogLine[] } {
  let text = ''
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      text += chunk.toString()
      done()
    }
  })
  return { stream, lines: () => parseLines(text) }
}

/** The JSON lines of a process's output (anything else, such as a line on stderr, is skipped). */
export function parseLines (output: string): LogLine[] {
  return output.split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return []
    try { return [JSON.parse(line) as LogLine] } catch { return [] }
  })
}
