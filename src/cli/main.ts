import { ConfigError } from '../config.js'
import { backupCommand } from './backup.js'
import { CommandFailed, parse, UsageError, type Command, type Io } from './command.js'
import { exportCommand } from './export.js'
import { importCommand } from './import.js'

// `plants`: the catalogue's command-line tool. Each command lives in its own module; this file
// only dispatches, prints help, and turns failures into messages and exit codes. plants.ts runs it.

const COMMANDS: Command[] = [importCommand, exportCommand, backupCommand]

function overview (): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length))
  return `Usage: plants COMMAND [options]

The plant catalogue's tool: works on the service's data folder (--data-dir, default $DATA_DIR)
or, where it makes sense, on a running service (--url).

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

Run plants COMMAND --help for a command's options.`
}

export async function main (argv: string[], io: Io): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? COMMANDS.find((c) => c.name === rest[0]) : undefined
    io.stdout.write(`${topic ? topic.usage : overview()}\n`)
    return name === undefined ? 2 : 0
  }
  const command = COMMANDS.find((c) => c.name === name)
  if (!command) {
    io.stderr.write(`plants: unknown command ${JSON.stringify(name)}\n\n${overview()}\n`)
    return 2
  }
  try {
    const { values, positionals } = parse(command, rest)
    if (values.help) {
      io.stdout.write(`${command.usage}\n`)
      return 0
    }
    return await command.run(values, positionals, io)
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`plants ${command.name}: ${err.message}\nRun plants ${command.name} --help for usage.\n`)
      return 2
    }
    if (err instanceof CommandFailed || err instanceof ConfigError) {
      io.stderr.write(`plants ${command.name}: ${err.message}\n`)
      return 1
    }
    throw err
  }
}
