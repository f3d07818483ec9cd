import { parseArgs, type ParseArgsConfig } from 'node:util'

// What every `plants` command shares: options, --help, and how failures reach the person.

export type Options = NonNullable<ParseArgsConfig['options']>

/** A mistake in how the command was called: printed with a pointer to --help, exit code 2. */
export class UsageError extends Error {}
/** The command cannot do its job (file missing, service down): printed, exit code 1. */
export class CommandFailed extends Error {}

export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean }
  stderr: NodeJS.WritableStream & { isTTY?: boolean }
  /** The process environment, read once here for defaults such as DATA_DIR. */
  env: NodeJS.ProcessEnv
}

export interface Command {
  name: string
  usage: string
  options: Options
  /** Resolves to the exit code. */
  run (values: Record<string, string | boolean | string[] | boolean[] | undefined>, positionals: string[], io: Io): Promise<number>
}

export type Format = 'csv' | 'jsonl'
export const FORMATS: readonly Format[] = ['csv', 'jsonl']

export const HELP: Options = { help: { type: 'boolean', short: 'h' } }

export const TARGET_OPTIONS: Options = {
  'data-dir': { type: 'string' },
  url: { type: 'string' },
  'api-key-file': { type: 'string' }
}

/** Where to read from: what export offers (it needs no key). */
export const TARGET_READ_HELP = `  --data-dir DIR       the service's data folder (default: the catalogue in $DATABASE_URL when set,
                       else $DATA_DIR, else ./data)
  --url URL            a running service instead, e.g. http://127.0.0.1:8080`

export const TARGET_HELP = `${TARGET_READ_HELP}
  --api-key-file FILE  with --url: a file holding an API key for writes (kept out of the process list)`

export function parse (command: Command, args: string[]): { values: Record<string, any>, positionals: string[] } {
  try {
    return parseArgs({ args, options: { ...HELP, ...command.options }, allowPositionals: true, strict: true })
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
}

/** One argument that must be a positive integer. */
export function positiveInteger (name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer, not ${JSON.stringify(value)}`)
  return n
}

export function oneOf<T extends string> (name: string, value: string | undefined, allowed: readonly T[], fallback: T | undefined): T | undefined {
  if (value === undefined) return fallback
  if (!(allowed as readonly string[]).includes(value)) throw new UsageError(`--${name} must be one of ${allowed.join(', ')}, not ${JSON.stringify(value)}`)
  return value as T
}

export function formatDuration (ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`
}

export const plural = (n: number, one: string, many = `${one}s`): string => `${n.toLocaleString('en')} ${n === 1 ? one : many}`
