import { userInfo } from 'node:os'
import pino from 'pino'
import type { Config } from '../config.js'
import type { Io } from './command.js'
import { CLI_WRITE } from './target.js'

// What cannot be undone, or changes who may do what, is logged by the command line as the service
// logs it: the same message and fields, at `info`, in the service's JSON form (LOG_LEVEL applies),
// so one search of the logs finds it whichever way it was done. `key` is the actor the CLI's
// writes carry (`cli`); `user` the account that ran it, where the service names a key. On standard
// error: standard output is the command's own (a new key's secret).

export function auditLog (io: Io, config: Config, fields: Record<string, unknown>, message: string): void {
  if (config.logLevel === 'silent') return
  const log = pino({
    level: config.logLevel,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) }
  }, io.stderr)
  log.info({ key: CLI_WRITE.actor, user: accountName(), ...fields }, message)
}

function accountName (): string | undefined {
  try {
    return userInfo().username
  } catch {
    return undefined // an account with no entry in the password database (a container's bare uid)
  }
}
