import { createHash, randomBytes } from 'node:crypto'
import { FILE_CHUNK_BYTES, FILES_PATH } from '../../src/catalogue/photo.js'
import type { PlantStore } from '../../src/store/plant-store.js'

/** A stored photo file's bytes, read chunk by chunk as the file route reads them (undefined: not stored). */
export async function wholeFile (store: PlantStore, name: string): Promise<Buffer | undefined> {
  const first = await store.photoFile(name, 0)
  if (!first) return undefined
  const chunks = [Buffer.from(first.chunk!)]
  for (let n = 1; n * FILE_CHUNK_BYTES < first.size; n++) chunks.push(Buffer.from((await store.photoFile(name, n))!.chunk!))
  return Buffer.concat(chunks)
}

/** `store`, with the chunk every photoFile read asks for recorded in `reads` (undefined: the size alone). */
export function recordFileReads (store: PlantStore): { store: PlantStore, reads: Array<number | undefined> } {
  const reads: Array<number | undefined> = []
  const recorded = new Proxy(store, {
    get (target, property) {
      if (property === 'photoFile') {
        return async (name: string, chunk?: number) => {
          reads.push(chunk)
          return await target.photoFile(name, chunk)
        }
      }
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    }
  })
  return { store: recorded, reads }
}

/** Stores `bytes` as a photo file of the plant (all three of its urls), straight through the store; its URL. */
export async function storeFile (store: PlantStore, plantId: number, bytes: Buffer, ext = 'png'): Promise<string> {
  const name = `${createHash('sha256').update(bytes).digest('base64url')}.${ext}`
  const url = FILES_PATH + name
  const photo = { id: randomBytes(12).toString('base64url'), width: 1, height: 1, urls: { thumb: url, display: url, full: url } }
  await store.addPhoto(plantId, { photo, files: [{ name, bytes }] })
  return url
}
