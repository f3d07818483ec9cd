import { closest, CommandFailed, parse, UsageError, type Command, type Io } from './command.js'

// `plants`: the catalogue's command-line tool. Each command lives in its own module; this file
// only dispatches, prints help, and turns failures into messages and exit codes. plants.ts runs it.

interface Entry { name: string, summary: string, load (): Promise<Command> }

// Loaded on use: export then carries neither the validator nor the CSV parser, which keeps its memory low.
const COMMANDS: Entry[] = [
  { name: 'import', summary: 'add and update plants from a CSV or JSON Lines file: a row with an id or a known sku updates that plant, any other adds one', load: async () => (await import('./import.js')).importCommand },
  { name: 'export', summary: 'write the whole catalogue as CSV or JSON Lines, streamed', load: async () => (await import('./export.js')).exportCommand },
  { name: 'backup', summary: 'take a consistent copy of the embedded database, while the service runs', load: async () => (await import('./backup.js')).backupCommand },
  { name: 'restore', summary: 'replace the embedded catalogue with a backup, reusing no id, ETag or feed position handed out since', load: async () => (await import('./restore.js')).restoreCommand },
  { name: 'restore-marks', summary: 'save what a catalogue handed out, and apply it to one restored with pg_restore', load: async () => (await import('./restore-marks.js')).restoreMarksCommand },
  { name: 'migrate', summary: 'copy the embedded catalogue into PostgreSQL: ids, versions, sequences, feed; then verify', load: async () => (await import('./migrate.js')).migrateCommand },
  { name: 'keys', summary: 'create, list and revoke the API keys stored in the catalogue (scopes read, sell, write, admin)', load: async () => (await import('./keys.js')).keysCommand },
  { name: 'trash', summary: 'list the deleted plants waiting in the trash, and purge one for good', load: async () => (await import('./trash.js')).trashCommand },
  { name: 'webhooks', summary: 'add, list, pause, resume, remove and test the webhooks that push changes to other systems', load: async () => (await import('./webhooks.js')).webhooksCommand }
]

function overview (): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length))
  return `Usage: plants COMMAND [options]

The plant catalogue's tool: works on the service's data folder (--data-dir, default $DATA_DIR)
or, where it makes sense, on a running service (--url).

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

Run plants COMMAND --help for a command's options; plants --version prints the release.`
}

export async function main (argv: string[], io: Io): Promise<number> {
  // `npx plants -- --version`: some npm versions want `--` before the tool's own options; it says nothing here.
  const [name, ...rest] = argv[0] === '--' ? argv.slice(1) : argv
  if (name === '--version' || name === '-V') {
    io.stdout.write(`${(await import('../version.js')).PACKAGE_VERSION}\n`)
    return 0
  }
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? COMMANDS.find((c) => c.name === rest[0]) : undefined
    io.stdout.write(`${topic ? (await topic.load()).usage : overview()}\n`)
    return name === undefined ? 2 : 0
  }
  const entry = COMMANDS.find((c) => c.name === name)
  if (!entry) {
    const meant = closest(name, COMMANDS.map((c) => c.name))
    io.stderr.write(`plants: unknown command ${JSON.stringify(name)}${meant === undefined ? '' : `: did you mean ${meant}?`}\n\n${overview()}\n`)
    return 2
  }
  const command = await entry.load()
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
    if (err instanceof CommandFailed) {
      io.stderr.write(`plants ${command.name}: ${err.message}\n`)
      return 1
    }
    throw err
  }
}
