import { existsSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { CommandFailed } from './command.js'

// Every command that writes a file (export --output, backup, restore-marks save) checks where it
// goes first and words a failure by the file asked for: the temporary .partial-PID beside it is
// an inner detail the person never named.

/** Refuses, before anything is read, a file whose folder is missing or is not a folder. */
export function checkOutputFolder (target: string, command: string): void {
  const folder = dirname(resolve(target))
  if (!existsSync(folder)) throw new CommandFailed(`the folder ${folder} does not exist: create it first (${command} makes no folders)`)
  if (!statSync(folder).isDirectory()) throw new CommandFailed(`${folder} is not a folder`)
}

/** A failure writing `target` (or its temporary copy), said in the person's words. */
export function cannotWrite (target: string, err: unknown): CommandFailed {
  const e = err as NodeJS.ErrnoException
  const why: Record<string, string> = {
    ENOENT: `${dirname(resolve(target))} does not exist or cannot hold a new file`,
    EACCES: `no permission to write in ${dirname(resolve(target))}`,
    EPERM: `no permission to write in ${dirname(resolve(target))}`,
    ENOSPC: 'the disk is full',
    EDQUOT: 'the disk quota is used up',
    EROFS: 'the file system is read-only',
    EISDIR: `${target} is a folder`,
    ENOTDIR: `a part of ${dirname(resolve(target))} is not a folder`
  }
  const reason = (e.code !== undefined ? why[e.code] : undefined) ?? (e.message ?? String(err)).replace(/\S*\.partial-\d+\S*/g, target)
  return new CommandFailed(`cannot write ${target}: ${reason}`)
}
