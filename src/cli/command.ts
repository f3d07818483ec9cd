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
  const options = { ...HELP, ...command.options }
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true })
  } catch (err) {
    const unknown = (err as NodeJS.ErrnoException).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? unknownOption(args, options) : undefined
    throw new UsageError(unknown ?? (err as Error).message)
  }
}

/**
 * The first option the command does not have, as typed, and the one likely meant. Node's own words
 * offer no guess and end on an unclosed quote. Parsed again leniently, for the argument as written:
 * "-dry-run" is that, not the "-d" the strict parser names.
 */
function unknownOption (args: string[], options: Options): string | undefined {
  const { tokens } = parseArgs({ args, options, allowPositionals: true, strict: false, tokens: true })
  const token = tokens.find((t) => t.kind === 'option' && !Object.hasOwn(options, t.name))
  if (token === undefined) return undefined
  const typed = args[token.index].replace(/=.*$/s, '')
  const meant = closest(typed, Object.keys(options))
  return `unknown option ${typed}${meant === undefined ? '' : `: did you mean --${meant}?`}`
}

/** A name that differs from `typed` only by dashes and case, else by one or two letters (a short name by one). */
export function closest (typed: string, names: string[]): string | undefined {
  const letters = (text: string): string => text.toLowerCase().replace(/[^a-z0-9]/g, '')
  const same = names.find((name) => letters(name) === letters(typed))
  if (same !== undefined) return same
  const word = typed.replace(/^-+/, '').toLowerCase()
  let best: { name: string, distance: number } | undefined
  for (const name of names) {
    const distance = editDistance(word, name)
    if (distance <= (name.length > 5 ? 2 : 1) && (best === undefined || distance < best.distance)) best = { name, distance }
  }
  return best?.name
}

/** Letters added, removed, replaced or two swapped (a typist's slips), each counting one. */
function editDistance (a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => i === 0 ? j : j === 0 ? i : 0))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1)
    }
  }
  return d[a.length][b.length]
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

/** What a list prints with --json: an array (empty when there is nothing), one member a line's indent, for jq and scripts. */
export const jsonArray = (items: unknown[]): string => `${JSON.stringify(items, null, 2)}\n`
