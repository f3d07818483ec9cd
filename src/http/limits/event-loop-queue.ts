/**
 * Runs the work given to it one piece per turn of the event loop, in the order given. Requests that
 * arrive together are read in one turn (libuv's poll phase hands over every socket that has data),
 * and work done for each there adds up: batches arriving together, each body decoded, parsed,
 * scanned and validated on arrival, held the loop many times as long as one batch takes.
 * A piece queued here runs in a check phase of its own (an immediate queued by an immediate waits
 * for the next turn), so timers and other sockets are served between pieces.
 */
export function oneATurn (): (work: () => void) => void {
  const queue: Array<() => void> = []
  let scheduled = false
  const next = (): void => {
    const work = queue.shift()!
    try {
      work()
    } finally {
      if (queue.length > 0) setImmediate(next)
      else scheduled = false
    }
  }
  return (work) => {
    queue.push(work)
    if (!scheduled) {
      scheduled = true
      setImmediate(next)
    }
  }
}
