import assert from 'node:assert/strict'
import { test } from 'node:test'
import { PhotoLimitReached, PhotoNotFound, PhotoOrderInvalid } from '../../src/catalogue/errors.js'
import { MAX_PHOTOS, photoRefusalOf, PHOTO_REFUSALS, reordered, withPhotoAdded, withPhotoRemoved, type Photo } from '../../src/catalogue/photo.js'

// The photo rules both engines call inside a write (catalogue/photo.ts): each gives the new list or
// throws the catalogue's error, whatever engine holds the plant.

const photo = (id: string): Photo => ({ id, width: 1, height: 1, urls: { thumb: `/v3/photos/${id}t`, display: `/v3/photos/${id}d`, full: `/v3/photos/${id}f` } })
const photos = (n: number): Photo[] => Array.from({ length: n }, (_, i) => photo(`p${i}`))

test('a photo is added last while there is room, and refused with PhotoLimitReached at MAX_PHOTOS', () => {
  const before = photos(MAX_PHOTOS - 1)
  const after = withPhotoAdded(before, photo('new'))
  assert.deepEqual(after.map((p) => p.id), [...before.map((p) => p.id), 'new'])
  assert.equal(before.length, MAX_PHOTOS - 1, 'the list given is left as it was')
  assert.throws(() => withPhotoAdded(after, photo('one-too-many')), PhotoLimitReached)
})

test('a photo removed leaves the others in order and names the one gone; an unknown id is PhotoNotFound', () => {
  const { photos: left, gone } = withPhotoRemoved(photos(3), 'p1')
  assert.deepEqual(left.map((p) => p.id), ['p0', 'p2'])
  assert.equal(gone.id, 'p1')
  assert.throws(() => withPhotoRemoved(photos(3), 'p9'), PhotoNotFound)
})

test('a new order naming each photo once is applied; any other is PhotoOrderInvalid', () => {
  assert.deepEqual(reordered(photos(3), ['p2', 'p0', 'p1']).map((p) => p.id), ['p2', 'p0', 'p1'])
  for (const order of [['p0', 'p1'], ['p0', 'p1', 'p1'], ['p0', 'p1', 'p9'], ['p0', 'p1', 'p2', 'p0']]) {
    assert.throws(() => reordered(photos(3), order), PhotoOrderInvalid, order.join(','))
  }
})

test('each rule\'s error has a name that crosses a thread, and that name gives the same error back', () => {
  for (const rule of [() => withPhotoAdded(photos(MAX_PHOTOS), photo('x')), () => withPhotoRemoved([], 'x'), () => reordered(photos(1), [])]) {
    let thrown: unknown
    try { rule() } catch (err) { thrown = err }
    const refusal = photoRefusalOf(thrown)
    assert.ok(refusal !== undefined, String(thrown))
    assert.ok(new PHOTO_REFUSALS[refusal]() instanceof (thrown as Error).constructor)
  }
  assert.equal(photoRefusalOf(new Error('anything else')), undefined)
})
