import { PassThrough } from 'node:stream'
import { main } from '../../src/cli/main.js'

export interface CliResult { code: number, stdout: string, stderr: string }

/** Runs `plants ARGS` in this process with captured output (not a terminal, so no progress bar). */
export async function plants (args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  const out: Buffer[] = []
  const err: Buffer[] = []
  stdout.on('data', (b: Buffer) => out.push(b))
  stderr.on('data', (b: Buffer) => err.push(b))
  const code = await main(args, { stdout, stderr, env })
  return { code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }
}

/** A CSV file body: the header, then one line per row (cells already quoted where needed). */
export const csv = (...rows: string[]): string => ['name,category,tags,status', ...rows].join('\n') + '\n'
