import { FILE_CHUNK_BYTES } from '../../src/catalogue/photo.js'
import type { PlantStore } from '../../src/store/plant-store.js'

/** A stored photo file's bytes, read chunk by chunk as the file route reads them (undefined: not stored). */
export async function wholeFile (store: PlantStore, name: string): Promise<Buffer | undefined> {
  const first = await store.photoFile(name, 0)
  if (!first) return undefined
  const chunks = [Buffer.from(first.chunk!)]
  for (let n = 1; n * FILE_CHUNK_BYTES < first.size; n++) chunks.push(Buffer.from((await store.photoFile(name, n))!.chunk!))
  return Buffer.concat(chunks)
}
