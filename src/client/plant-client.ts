import createClient, { type Client } from 'openapi-fetch'
import type { operations, paths } from './generated/openapi.js'

// A typed client for the catalogue: the paths and bodies come from `generated/openapi.d.ts`,
// so a request or response that drifts from the served document fails to compile.

export type { operations, paths } from './generated/openapi.js'

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never

/** A stored plant, as the API answers it. */
export type Plant = Json<operations['get-plant']['responses'][200]>
/** The body of add-plant. */
export type NewPlant = operations['add-plant']['requestBody']['content']['application/json']
/** The body of update-plant (the whole plant, named by id). */
export type PlantUpdate = operations['update-plant']['requestBody']['content']['application/json']
/** A page of list-plants. */
export type PlantPage = Json<operations['list-plants']['responses'][200]>
/** What count-plants answers: `{ count, exact }`, exact up to 10,000. */
export type PlantCount = Json<operations['count-plants']['responses'][200]>
/** A photo of a plant, as add-plant-photo answers it and every record lists it. */
export type Photo = Json<operations['add-plant-photo']['responses'][201]>
/** The picture types add-plant-photo accepts. */
export type PhotoType = keyof operations['add-plant-photo']['requestBody']['content']
/** The one error body of the API (problem details). */
export type Problem = Json<operations['add-plant']['responses'][405]>

/** One operation of batch-plants: create, update, patch or delete, each with its own body. */
export type BatchOperation = operations['batch-plants']['requestBody']['content']['application/json']['operations'][number]
/** What batch-plants answers when every operation applied: one result each, in order. */
export type BatchResults = Json<operations['batch-plants']['responses'][200]>

export type PlantClient = Client<paths>

export interface PlantClientOptions {
  /** The service's origin, e.g. `http://127.0.0.1:8080` (paths in the document already start with /v3). */
  baseUrl: string
  /** Sent as `Authorization: Bearer <key>` when the service requires keys for writes. */
  apiKey?: string
  /** Replaces globalThis.fetch (tests, proxies, retries). */
  fetch?: (input: Request) => Promise<Response>
  headers?: Record<string, string>
}

export function createPlantClient (options: PlantClientOptions): PlantClient {
  const headers: Record<string, string> = { ...options.headers }
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`
  return createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers,
    ...(options.fetch ? { fetch: options.fetch } : {})
  })
}

/** A one-line description of a failed call, for messages to a person. */
export function describeProblem (status: number, problem: Partial<Problem> | undefined): string {
  const detail = problem?.detail ?? problem?.title
  return detail ? `${status} ${detail}` : `HTTP ${status}`
}

/**
 * Applies many operations at once, all or nothing (POST /v3/plant/batch): `data` is the results on
 * 200; otherwise `error` names every refused or invalid operation by index (`/operations/3/…`) and
 * nothing was applied. An `idempotencyKey` covers the whole batch, so a retry applies it once.
 */
export function batchPlants (client: PlantClient, operations: BatchOperation[], options: { idempotencyKey?: string } = {}) {
  return client.POST('/v3/plant/batch', {
    params: { header: options.idempotencyKey === undefined ? undefined : { 'idempotency-key': options.idempotencyKey } },
    body: { operations }
  })
}

export interface UploadPhotoOptions {
  /** The picture's type; a Blob (a File from a picker) gives its own when this is absent. */
  type?: PhotoType
  /** The plant's ETag: the upload then applies only to that version (412 otherwise). */
  ifMatch?: string
}

/**
 * Adds a photo to a plant: the body is the picture itself, sent as is (not JSON, not multipart).
 * Answers as every call of the client does: `data` is the Photo on 201, `error` the problem otherwise.
 */
// Bytes carry no type of their own: with a Uint8Array the type is required (without one the upload was 415).
export function uploadPhoto (client: PlantClient, plantId: number, picture: Blob, options?: UploadPhotoOptions): ReturnType<typeof postPhoto>
export function uploadPhoto (client: PlantClient, plantId: number, picture: Uint8Array, options: UploadPhotoOptions & { type: PhotoType }): ReturnType<typeof postPhoto>
export function uploadPhoto (client: PlantClient, plantId: number, picture: Blob | Uint8Array, options: UploadPhotoOptions = {}) {
  return postPhoto(client, plantId, picture, options)
}

function postPhoto (client: PlantClient, plantId: number, picture: Blob | Uint8Array, options: UploadPhotoOptions) {
  const type = options.type ?? (picture instanceof Blob ? picture.type : '')
  return client.POST('/v3/plant/{id}/photos', {
    params: { path: { id: plantId }, header: options.ifMatch === undefined ? undefined : { 'if-match': options.ifMatch } },
    // The document types a binary body as a string (format: binary); the bytes go as they are.
    body: picture as unknown as string,
    // The picture goes as it is: the client's default would write it as JSON.
    bodySerializer: (body: unknown) => body as BodyInit,
    headers: { 'content-type': type }
  })
}
